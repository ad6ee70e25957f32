//! The meeting point of a world whose ranks run in several processes (docs/mpi.md).
//!
//! One process, the host, holds the world's one [`Comm`]; its own ranks meet there directly.
//! Every other process holds a [`Remote`]: a [`Meeting`] that forwards each post, wait and
//! leave of its ranks to the host as a frame and blocks until the host answers. On the host,
//! [`Host`] applies each frame to the [`Comm`] (a wait on a thread of its own) and queues the
//! answer. The collectives therefore complete, fold ([`Order`](super::collective::Order)),
//! mismatch and deadlock exactly as in one process: the same [`Comm`] sees the same posts.
//!
//! Frames travel over a [`Link`] (MPI in the `sim` tool; channels in the tests), moved by
//! [`pump_host`] and [`pump_client`], which each process runs on the one thread that may use
//! the link while its ranks run on others. Frames from one process to another must arrive in
//! the order they were sent (MPI's non-overtaking rule gives it).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tpbsim_isa::{Engine, NumFormat};

use super::collective::{Comm, Kind, Meeting, Member, Post, Received, Reduce};
use super::fault::Site;

/// What a process asks the host.
#[derive(Clone, Debug)]
pub enum Request {
    /// [`Meeting::post`].
    Post(Member, Post),
    /// [`Meeting::wait`].
    Wait(Member, Vec<u64>, String),
    /// [`Meeting::leave`].
    Leave(Member, bool),
    /// The process's ranks have all stopped: it sends nothing more in this run.
    Done,
}

/// What the host answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// The ticket of a post.
    Ticket(u64),
    /// The outcome of a wait.
    Waited(Result<Vec<(u64, Received)>, String>),
}

const REQ_POST: u8 = 1;
const REQ_WAIT: u8 = 2;
const REQ_LEAVE: u8 = 3;
const REQ_DONE: u8 = 4;
const REP_TICKET: u8 = 1;
const REP_WAITED: u8 = 2;

/// A frame being written: little-endian integers, length-prefixed bytes.
#[derive(Default)]
struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.u64(v.len() as u64);
        self.0.extend_from_slice(v);
        self
    }
    fn member(&mut self, m: Member) -> &mut Self {
        self.u32(m.rank).u32(m.core)
    }
    fn received(&mut self, r: &Received) -> &mut Self {
        match r {
            Ok(v) => self.u8(0).bytes(v),
            Err(e) => self.u8(1).bytes(e.as_bytes()),
        }
    }
}

/// A frame being read; every read names what is missing or wrong.
struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, at: 0 }
    }
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| {
                format!(
                    "frame of {} bytes ends inside its {what} (at byte {})",
                    self.buf.len(),
                    self.at
                )
            })?;
        let s = &self.buf[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u8(&mut self, what: &str) -> Result<u8, String> {
        Ok(self.take(1, what)?[0])
    }
    fn u32(&mut self, what: &str) -> Result<u32, String> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self, what: &str) -> Result<u64, String> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8, what)?);
        Ok(u64::from_le_bytes(a))
    }
    fn len(&mut self, what: &str) -> Result<usize, String> {
        let n = self.u64(what)?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.buf.len() - self.at)
            .ok_or_else(|| format!("frame's {what}: {n} bytes, more than the frame holds"))
    }
    fn bytes(&mut self, what: &str) -> Result<Vec<u8>, String> {
        let n = self.len(what)?;
        Ok(self.take(n, what)?.to_vec())
    }
    fn text(&mut self, what: &str) -> Result<String, String> {
        String::from_utf8(self.bytes(what)?).map_err(|_| format!("frame's {what}: not UTF-8"))
    }
    fn member(&mut self) -> Result<Member, String> {
        Ok(Member {
            rank: self.u32("member rank")?,
            core: self.u32("member core")?,
        })
    }
    fn received(&mut self) -> Result<Received, String> {
        match self.u8("result tag")? {
            0 => Ok(Ok(Arc::new(self.bytes("result bytes")?))),
            1 => Ok(Err(self.text("result error")?)),
            t => Err(format!("frame: result tag {t} is neither 0 nor 1")),
        }
    }
    fn end(&self) -> Result<(), String> {
        if self.at == self.buf.len() {
            Ok(())
        } else {
            Err(format!(
                "frame of {} bytes has {} bytes after its end",
                self.buf.len(),
                self.buf.len() - self.at
            ))
        }
    }
}

fn kind_code(k: Kind) -> u8 {
    match k {
        Kind::AllReduce => 1,
        Kind::ReduceScatter => 2,
        Kind::AllGather => 3,
        Kind::AllToAll => 4,
        Kind::Permute => 5,
        Kind::SendRecv => 6,
    }
}

/// The kind of a frame's code ([`kind_code`]'s inverse).
fn kind_of_code(c: u8) -> Result<Kind, String> {
    Ok(match c {
        1 => Kind::AllReduce,
        2 => Kind::ReduceScatter,
        3 => Kind::AllGather,
        4 => Kind::AllToAll,
        5 => Kind::Permute,
        6 => Kind::SendRecv,
        _ => return Err(format!("frame: collective kind code {c} names no kind")),
    })
}

fn reduce_code(r: Option<Reduce>) -> u8 {
    match r {
        None => 0,
        Some(Reduce::Add) => 1,
        Some(Reduce::Max) => 2,
        Some(Reduce::Min) => 3,
    }
}

fn write_post(w: &mut Writer, p: &Post) {
    w.u8(kind_code(p.kind))
        .u8(reduce_code(p.reduce))
        .u8(p.op)
        .u8(p.format as u8)
        .u64(p.elements)
        .u32(p.group.len() as u32);
    for r in &p.group {
        w.u32(*r);
    }
    w.u32(p.pairs.len() as u32);
    for (s, t) in &p.pairs {
        w.u32(*s).u32(*t);
    }
    w.bytes(&p.data)
        .u8(p.site.engine as u8)
        .u64(p.site.index as u64)
        .u8(p.site.opcode);
}

fn read_post(r: &mut Reader<'_>) -> Result<Post, String> {
    let kind = kind_of_code(r.u8("collective type")?)?;
    let reduce = match r.u8("reduction")? {
        0 => None,
        1 => Some(Reduce::Add),
        2 => Some(Reduce::Max),
        3 => Some(Reduce::Min),
        c => return Err(format!("frame: reduction code {c} names no reduction")),
    };
    let op = r.u8("ALU op")?;
    let f = r.u8("element type")?;
    let format = NumFormat::ALL
        .get(f as usize)
        .copied()
        .ok_or_else(|| format!("frame: element type {f} names no number format"))?;
    let elements = r.u64("element count")?;
    let n = r.u32("group size")? as usize;
    let group = (0..n)
        .map(|_| r.u32("group rank"))
        .collect::<Result<Vec<_>, _>>()?;
    let n = r.u32("pair count")? as usize;
    let pairs = (0..n)
        .map(|_| Ok((r.u32("pair source")?, r.u32("pair target")?)))
        .collect::<Result<Vec<_>, String>>()?;
    let data = r.bytes("contribution")?;
    let e = r.u8("engine")?;
    let engine = Engine::ALL
        .get(e as usize)
        .copied()
        .ok_or_else(|| format!("frame: engine {e} names no engine"))?;
    let index = usize::try_from(r.u64("bundle index")?)
        .map_err(|_| "frame: bundle index beyond this machine's addresses".to_string())?;
    let opcode = r.u8("opcode")?;
    Ok(Post {
        kind,
        reduce,
        op,
        format,
        elements,
        group,
        pairs,
        data: data.into(),
        site: Site {
            engine,
            index,
            opcode,
        },
    })
}

/// The frame of request `id`.
pub fn encode_request(id: u64, req: &Request) -> Vec<u8> {
    let mut w = Writer::default();
    w.u64(id);
    match req {
        Request::Post(m, p) => {
            w.u8(REQ_POST).member(*m);
            write_post(&mut w, p);
        }
        Request::Wait(m, tickets, stand) => {
            w.u8(REQ_WAIT).member(*m).u32(tickets.len() as u32);
            for t in tickets {
                w.u64(*t);
            }
            w.bytes(stand.as_bytes());
        }
        Request::Leave(m, faulted) => {
            w.u8(REQ_LEAVE).member(*m).u8(*faulted as u8);
        }
        Request::Done => {
            w.u8(REQ_DONE);
        }
    }
    w.0
}

/// The request of a frame and its id.
pub fn decode_request(frame: &[u8]) -> Result<(u64, Request), String> {
    let mut r = Reader::new(frame);
    let id = r.u64("request id")?;
    let req = match r.u8("request type")? {
        REQ_POST => {
            let m = r.member()?;
            Request::Post(m, read_post(&mut r)?)
        }
        REQ_WAIT => {
            let m = r.member()?;
            let n = r.u32("ticket count")? as usize;
            let tickets = (0..n)
                .map(|_| r.u64("ticket"))
                .collect::<Result<Vec<_>, _>>()?;
            Request::Wait(m, tickets, r.text("standing")?)
        }
        REQ_LEAVE => {
            let m = r.member()?;
            Request::Leave(m, r.u8("faulted flag")? != 0)
        }
        REQ_DONE => Request::Done,
        t => return Err(format!("frame: request type {t} is not one of 1..=4")),
    };
    r.end()?;
    Ok((id, req))
}

/// The frame of the answer to request `id`.
pub fn encode_reply(id: u64, rep: &Reply) -> Vec<u8> {
    let mut w = Writer::default();
    w.u64(id);
    match rep {
        Reply::Ticket(t) => {
            w.u8(REP_TICKET).u64(*t);
        }
        Reply::Waited(Ok(done)) => {
            w.u8(REP_WAITED).u8(0).u32(done.len() as u32);
            for (t, r) in done {
                w.u64(*t).received(r);
            }
        }
        Reply::Waited(Err(e)) => {
            w.u8(REP_WAITED).u8(1).bytes(e.as_bytes());
        }
    }
    w.0
}

/// The answer of a frame and the id of its request.
pub fn decode_reply(frame: &[u8]) -> Result<(u64, Reply), String> {
    let mut r = Reader::new(frame);
    let id = r.u64("request id")?;
    let rep = match r.u8("reply type")? {
        REP_TICKET => Reply::Ticket(r.u64("ticket")?),
        REP_WAITED => match r.u8("wait outcome")? {
            0 => {
                let n = r.u32("result count")? as usize;
                let done = (0..n)
                    .map(|_| Ok((r.u64("ticket")?, r.received()?)))
                    .collect::<Result<Vec<_>, String>>()?;
                Reply::Waited(Ok(done))
            }
            1 => Reply::Waited(Err(r.text("wait error")?)),
            t => return Err(format!("frame: wait outcome {t} is neither 0 nor 1")),
        },
        t => return Err(format!("frame: reply type {t} is not 1 or 2")),
    };
    r.end()?;
    Ok((id, rep))
}

/// How frames travel between the processes of a world: process 0 is the host.
pub trait Link {
    /// Send `frame` to process `to`. An implementation whose sends can block must keep taking
    /// in frames meanwhile (for [`Link::try_recv`]), so that two processes sending to each
    /// other never wait on each other.
    fn send(&mut self, to: usize, frame: &[u8]) -> Result<(), String>;
    /// A frame that has arrived and its sender, if there is one; never blocks.
    fn try_recv(&mut self) -> Result<Option<(usize, Vec<u8>)>, String>;
}

/// The host's side: applies the other processes' requests to the world's [`Comm`].
#[derive(Debug)]
pub struct Host {
    comm: Arc<Comm>,
    tx: Sender<(usize, Vec<u8>)>,
    rx: Receiver<(usize, Vec<u8>)>,
    waiting: Arc<AtomicUsize>,
}

impl Host {
    /// The host of `comm`.
    pub fn new(comm: Arc<Comm>) -> Host {
        let (tx, rx) = channel();
        Host {
            comm,
            tx,
            rx,
            waiting: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Apply the request in `frame` from process `from`; whether it was that process's last
    /// ([`Request::Done`]). A wait is served on a thread of its own; the answers are queued
    /// for [`Host::answer`].
    pub fn handle(&self, from: usize, frame: &[u8]) -> Result<bool, String> {
        let (id, req) = decode_request(frame).map_err(|e| format!("process {from}: {e}"))?;
        match req {
            Request::Post(m, p) => {
                let t = self.comm.post(m, p);
                let _ = self.tx.send((from, encode_reply(id, &Reply::Ticket(t))));
            }
            Request::Wait(m, tickets, stand) => {
                let comm = self.comm.clone();
                let tx = self.tx.clone();
                let waiting = self.waiting.clone();
                waiting.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    let r = comm.wait(m, &tickets, stand).map_err(|d| d.report);
                    let _ = tx.send((from, encode_reply(id, &Reply::Waited(r))));
                    waiting.fetch_sub(1, Ordering::SeqCst);
                });
            }
            Request::Leave(m, faulted) => self.comm.leave(m, faulted),
            Request::Done => return Ok(true),
        }
        Ok(false)
    }

    /// An answer ready to send, and the process it goes to.
    pub fn answer(&self) -> Option<(usize, Vec<u8>)> {
        self.rx.try_recv().ok()
    }

    /// Waits of other processes' members still being served.
    pub fn serving(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }
}

/// A process's side: a [`Meeting`] whose every call is forwarded to the host. The frames go
/// out through [`Remote::outgoing`] and the answers come in through [`Remote::deliver`], both
/// on the thread that runs [`pump_client`].
#[derive(Debug)]
pub struct Remote {
    out_tx: Mutex<Sender<Vec<u8>>>,
    out_rx: Mutex<Receiver<Vec<u8>>>,
    pending: Mutex<BTreeMap<u64, Sender<Reply>>>,
    next: AtomicU64,
    failed: Mutex<Option<String>>,
}

impl Default for Remote {
    fn default() -> Self {
        let (tx, rx) = channel();
        Remote {
            out_tx: Mutex::new(tx),
            out_rx: Mutex::new(rx),
            pending: Mutex::new(BTreeMap::new()),
            next: AtomicU64::new(1),
            failed: Mutex::new(None),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Remote {
    /// Send `req` and, when `answered`, the channel its answer will come on.
    fn send(&self, req: &Request, answered: bool) -> Result<Option<Receiver<Reply>>, String> {
        if let Some(e) = lock(&self.failed).clone() {
            return Err(e);
        }
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let rx = answered.then(|| {
            let (tx, rx) = channel();
            lock(&self.pending).insert(id, tx);
            rx
        });
        lock(&self.out_tx)
            .send(encode_request(id, req))
            .map_err(|_| "the link to the host process is closed".to_string())?;
        Ok(rx)
    }

    fn ask(&self, req: &Request) -> Result<Reply, String> {
        let rx = self.send(req, true)?;
        let answer = rx.and_then(|rx| rx.recv().ok());
        answer.ok_or_else(|| {
            lock(&self.failed)
                .clone()
                .unwrap_or_else(|| "the link to the host process closed".into())
        })
    }

    /// A frame to send to the host.
    pub fn outgoing(&self) -> Option<Vec<u8>> {
        lock(&self.out_rx).try_recv().ok()
    }

    /// A frame from the host: hand the answer to the member that waits for it.
    pub fn deliver(&self, frame: &[u8]) -> Result<(), String> {
        let (id, rep) = decode_reply(frame)?;
        let tx = lock(&self.pending)
            .remove(&id)
            .ok_or_else(|| format!("the host answered request {id}, which is not open"))?;
        let _ = tx.send(rep);
        Ok(())
    }

    /// The link failed: every open and later call fails with `why`.
    pub fn fail(&self, why: String) {
        lock(&self.failed).get_or_insert(why);
        lock(&self.pending).clear();
    }
}

impl Meeting for Remote {
    fn post(&self, m: Member, p: Post) -> Result<u64, String> {
        match self.ask(&Request::Post(m, p))? {
            Reply::Ticket(t) => Ok(t),
            r => Err(format!("the host answered a post with {r:?}")),
        }
    }

    fn wait(
        &self,
        m: Member,
        tickets: &[u64],
        where_: String,
    ) -> Result<Vec<(u64, Received)>, String> {
        match self.ask(&Request::Wait(m, tickets.to_vec(), where_))? {
            Reply::Waited(r) => r,
            r => Err(format!("the host answered a wait with {r:?}")),
        }
    }

    fn leave(&self, m: Member, faulted: bool) {
        // A failed link has failed every wait already: nothing more to tell.
        let _ = self.send(&Request::Leave(m, faulted), false);
    }
}

/// Sleeps of a pump with nothing to do: short at first, longer while it stays idle.
struct Backoff(u32);

impl Backoff {
    fn idle(&mut self) {
        std::thread::sleep(Duration::from_micros(10u64 << self.0.min(7)));
        self.0 += 1;
    }
}

/// Move the frames of the host (process 0 of `processes`) until every other process is done:
/// requests in to `host`, answers out. Runs on the thread that owns `link` while the host's
/// own ranks run on others. An error of the link stops the world's [`Comm`] first, so that no
/// member waits for ever.
pub fn pump_host(link: &mut dyn Link, host: &Host, processes: usize) -> Result<(), String> {
    let r = pump_host_inner(link, host, processes);
    if let Err(e) = &r {
        host.comm
            .abort(format!("the link between the processes failed: {e}"));
    }
    r
}

fn pump_host_inner(link: &mut dyn Link, host: &Host, processes: usize) -> Result<(), String> {
    let mut done = vec![false; processes.max(1)];
    done[0] = true;
    let mut backoff = Backoff(0);
    loop {
        let mut busy = false;
        while let Some((to, frame)) = host.answer() {
            link.send(to, &frame)?;
            busy = true;
        }
        if let Some((from, frame)) = link.try_recv()? {
            let slot = done
                .get_mut(from)
                .ok_or_else(|| format!("a frame from process {from}, outside the world"))?;
            if host.handle(from, &frame)? {
                *slot = true;
            }
            busy = true;
        }
        if done.iter().all(|d| *d) && host.serving() == 0 {
            // Every other process received all its answers before it was done.
            return Ok(());
        }
        if busy {
            backoff.0 = 0;
        } else {
            backoff.idle();
        }
    }
}

/// Move the frames of a process other than the host until `finished` (its ranks have all
/// stopped): requests out, answers in; then tell the host it is done. An error of the link
/// fails every open call of `remote` first.
pub fn pump_client(
    link: &mut dyn Link,
    remote: &Remote,
    finished: &AtomicBool,
) -> Result<(), String> {
    let r = pump_client_inner(link, remote, finished);
    if let Err(e) = &r {
        remote.fail(format!("the link to the host process failed: {e}"));
    }
    r
}

fn pump_client_inner(
    link: &mut dyn Link,
    remote: &Remote,
    finished: &AtomicBool,
) -> Result<(), String> {
    let mut backoff = Backoff(0);
    loop {
        // Read before draining: what the ranks sent before they finished goes out below.
        let stopped = finished.load(Ordering::SeqCst);
        let mut busy = false;
        while let Some(frame) = remote.outgoing() {
            link.send(0, &frame)?;
            busy = true;
        }
        if stopped {
            return link.send(0, &encode_request(0, &Request::Done));
        }
        if let Some((from, frame)) = link.try_recv()? {
            if from != 0 {
                return Err(format!("a frame from process {from}, not the host"));
            }
            remote.deliver(&frame)?;
            busy = true;
        }
        if busy {
            backoff.0 = 0;
        } else {
            backoff.idle();
        }
    }
}

/// How the ranks of a world are spread over the processes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Placement {
    /// Process p runs a contiguous block of ranks, the blocks in process order and their
    /// sizes differing by at most one (p·N/P up to (p+1)·N/P).
    #[default]
    Blocks,
    /// Process p runs ranks p, p + P, p + 2P, ...
    RoundRobin,
}

impl Placement {
    /// The ranks of process `process` of `processes` in a world of `ranks`, in rank order.
    pub fn ranks_of(self, process: usize, processes: usize, ranks: usize) -> Vec<usize> {
        let p = processes.max(1);
        match self {
            Placement::Blocks => (process * ranks / p..(process + 1) * ranks / p).collect(),
            Placement::RoundRobin => (0..ranks).filter(|r| r % p == process).collect(),
        }
    }
}

/// Sets a flag when dropped: a pump stops even when the ranks' thread panics.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// One run of the ranks of process `me` of `processes` (process 0 the host): `run` runs this
/// process's ranks on a thread of its own, meeting the world at the given [`Meeting`], while
/// the calling thread moves the frames over `link` ([`pump_host`] or [`pump_client`]). The
/// host's meeting is the world's [`Comm`], made by `world`; the others' is a [`Remote`].
/// Returns what `run` returned, once every process is done with the run (on the host) or
/// this one is (elsewhere). Every process of the world must call it for the same run, and
/// frames of one run must not be mistaken for another's: the caller separates runs (a
/// barrier, or a tag per run).
pub fn session<R: Send>(
    link: &mut dyn Link,
    me: usize,
    processes: usize,
    world: impl FnOnce() -> Arc<Comm>,
    run: impl FnOnce(Arc<dyn Meeting>) -> R + Send,
) -> Result<R, String> {
    let join = |h: std::thread::ScopedJoinHandle<'_, R>| {
        h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
    };
    if me == 0 {
        let comm = world();
        let host = Host::new(comm.clone());
        std::thread::scope(|s| {
            let h = s.spawn(|| run(comm as Arc<dyn Meeting>));
            let pumped = pump_host(link, &host, processes);
            let r = join(h);
            pumped.map(|_| r)
        })
    } else {
        let remote = Arc::new(Remote::default());
        let finished = AtomicBool::new(false);
        std::thread::scope(|s| {
            let h = s.spawn(|| {
                let _done = SetOnDrop(&finished);
                run(remote.clone() as Arc<dyn Meeting>)
            });
            let pumped = pump_client(link, &remote, &finished);
            let r = join(h);
            pumped.map(|_| r)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post() -> Post {
        Post {
            kind: Kind::ReduceScatter,
            reduce: Some(Reduce::Max),
            op: 0x17,
            format: NumFormat::Bfloat16,
            elements: 6,
            group: vec![2, 0, 1],
            pairs: vec![(0, 1), (1, 2)],
            data: (0u8..12).collect::<Vec<u8>>().into(),
            site: Site {
                engine: Engine::Pool,
                index: 41,
                opcode: 0xC8,
            },
        }
    }

    #[test]
    fn every_collective_kind_has_one_frame_code_and_other_codes_are_refused() {
        let kinds = [
            Kind::AllReduce,
            Kind::ReduceScatter,
            Kind::AllGather,
            Kind::AllToAll,
            Kind::Permute,
            Kind::SendRecv,
        ];
        for k in kinds {
            assert_eq!(kind_of_code(kind_code(k)), Ok(k), "{k:?}");
        }
        let codes: std::collections::BTreeSet<u8> = kinds.iter().map(|&k| kind_code(k)).collect();
        assert_eq!(codes.len(), kinds.len());
        for c in [0, 7, 0xFF] {
            assert!(kind_of_code(c).is_err(), "{c}");
        }
    }

    #[test]
    fn requests_and_replies_survive_their_frames() {
        let m = Member { rank: 3, core: 1 };
        let (id, r) = decode_request(&encode_request(9, &Request::Post(m, post()))).unwrap();
        assert_eq!(id, 9);
        let Request::Post(m2, p) = r else {
            panic!("{r:?}")
        };
        let q = post();
        assert_eq!(m2, m);
        assert_eq!(
            (p.kind, p.reduce, p.op, p.format, p.elements),
            (q.kind, q.reduce, q.op, q.format, q.elements)
        );
        assert_eq!((p.group, p.pairs, p.data), (q.group, q.pairs, q.data));
        assert_eq!(
            (p.site.engine, p.site.index, p.site.opcode),
            (q.site.engine, q.site.index, q.site.opcode)
        );
        let w = Request::Wait(m, vec![4, 5], "rank 3 core 1 waiting".into());
        let Request::Wait(m2, t, s) = decode_request(&encode_request(2, &w)).unwrap().1 else {
            panic!()
        };
        assert_eq!(
            (m2, t, s.as_str()),
            (m, vec![4, 5], "rank 3 core 1 waiting")
        );
        let Request::Leave(_, f) = decode_request(&encode_request(3, &Request::Leave(m, true)))
            .unwrap()
            .1
        else {
            panic!()
        };
        assert!(f);
        for rep in [
            Reply::Ticket(7),
            Reply::Waited(Ok(vec![
                (1, Ok(Arc::new(vec![1, 2, 3]))),
                (2, Err("differ".into())),
            ])),
            Reply::Waited(Err("deadlock across ranks".into())),
        ] {
            assert_eq!(decode_reply(&encode_reply(5, &rep)).unwrap(), (5, rep));
        }
    }

    #[test]
    fn placements_give_every_rank_to_exactly_one_process() {
        for mode in [Placement::Blocks, Placement::RoundRobin] {
            for (ranks, procs) in [(4, 2), (5, 2), (2, 3), (7, 3), (1, 1), (8, 8)] {
                let mut all: Vec<usize> = (0..procs)
                    .flat_map(|p| mode.ranks_of(p, procs, ranks))
                    .collect();
                all.sort();
                assert_eq!(
                    all,
                    (0..ranks).collect::<Vec<_>>(),
                    "{mode:?} {ranks} {procs}"
                );
            }
        }
        assert_eq!(Placement::Blocks.ranks_of(1, 2, 4), vec![2, 3]);
        assert_eq!(Placement::RoundRobin.ranks_of(1, 2, 4), vec![1, 3]);
        assert_eq!(Placement::Blocks.ranks_of(2, 3, 7), vec![4, 5, 6]);
        assert!(Placement::Blocks.ranks_of(0, 3, 2).is_empty());
    }

    #[test]
    fn damaged_frames_are_named_errors() {
        let f = encode_request(1, &Request::Post(Member { rank: 0, core: 0 }, post()));
        for cut in [0, 5, 9, 20, f.len() - 1] {
            assert!(decode_request(&f[..cut]).is_err(), "{cut}");
        }
        let mut long = f.clone();
        long.push(0);
        assert!(decode_request(&long).unwrap_err().contains("after its end"));
        let mut bad = f.clone();
        bad[8] = 77;
        assert!(decode_request(&bad)
            .unwrap_err()
            .contains("request type 77"));
        // A length prefix larger than the frame.
        let mut huge = encode_reply(1, &Reply::Waited(Err("x".into())));
        huge[10..18].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode_reply(&huge)
            .unwrap_err()
            .contains("more than the frame"));
    }
}
