//! The timeline's dependency binding when an update coincides with the end of the waiting
//! track's previous slice, and the per-track busy / wait / idle split of the profile.

use tpbsim_isa::Engine;

use super::race::Agent;
use super::timeline::{Stamp, Timeline, CLOCK_GHZ};

fn engines() -> Timeline {
    Timeline::new(
        ["pe", "act", "pool", "dve", "sp"]
            .map(String::from)
            .to_vec(),
    )
}

/// ACT and POOL run at the same clock, so the same cycles end at the same time.
const CYCLES: u64 = 140;

#[test]
fn an_update_at_the_moment_the_track_is_free_does_not_set_the_start() {
    assert_eq!(
        CLOCK_GHZ[Engine::Act as usize],
        CLOCK_GHZ[Engine::Pool as usize]
    );
    let mut t = engines();
    t.start(Engine::Pool, 0.0);
    let pool_end = t.finish(Engine::Pool, "P0", String::new(), CYCLES);
    t.start(Engine::Act, 0.0);
    let act_end = t.finish(Engine::Act, "A0", String::new(), CYCLES);
    assert_eq!(act_end, pool_end);
    // POOL's next bundle waits for ACT's end-of-slice update, made the moment POOL is free:
    // its start is the end of its own previous slice, which needs no dependency.
    t.pending_flows.push((
        Engine::Act as Agent,
        Stamp::end(act_end),
        "semaphore 2".into(),
    ));
    assert_eq!(t.start(Engine::Pool, act_end), pool_end);
    t.finish(Engine::Pool, "P1", String::new(), CYCLES);
    let p1 = &t.slices[2];
    assert_eq!((p1.name.as_str(), p1.waited, p1.dep), ("P1", 0.0, None));
    assert_eq!(t.flows.len(), 1, "the wait is still a flow");
    let path: Vec<String> = t
        .profile()
        .critical_path
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(path, ["P0", "P1"]);

    // One nanosecond later, the update sets the start.
    let mut t = engines();
    t.start(Engine::Pool, 0.0);
    let pool_end = t.finish(Engine::Pool, "P0", String::new(), CYCLES);
    let late = Stamp::end(pool_end + 1.0);
    t.pending_flows
        .push((Engine::Act as Agent, late, "semaphore 2".into()));
    t.start(Engine::Pool, late.t);
    t.finish(Engine::Pool, "P1", String::new(), CYCLES);
    assert_eq!(t.slices[1].dep, Some((Engine::Act as Agent, late)));
    assert_eq!(t.slices[1].waited, late.t - pool_end);
}

#[test]
fn idle_time_is_what_busy_and_wait_leave_of_the_makespan() {
    let mut t = engines();
    t.start(Engine::Pool, 0.0);
    let e = t.finish(Engine::Pool, "P0", String::new(), CYCLES);
    // ACT waits until POOL's end, then runs as long.
    t.start(Engine::Act, e);
    let end = t.finish(Engine::Act, "A0", String::new(), CYCLES);
    assert_eq!(end, 2.0 * e);
    let p = t.profile();
    assert_eq!(p.makespan_ns, end);
    let split = |track: &str| {
        let x = p.tracks.iter().find(|x| x.track == track).unwrap();
        (x.busy_ns, x.wait_ns, x.idle_ns)
    };
    assert_eq!(split("act"), (e, e, 0.0));
    assert_eq!(split("pool"), (e, 0.0, e));
    assert_eq!(split("pe"), (0.0, 0.0, end));
}
