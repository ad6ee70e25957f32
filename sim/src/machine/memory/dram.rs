//! The DRAM variables of one core: byte buffers addressed by variable id, shared with the other
//! cores of a cluster until written (copy on write), and the record of the byte ranges a core
//! reads and writes in the variables it shares.

use std::ops::Deref;
use std::sync::Arc;

use crate::machine::pattern::AccessError;
use tpbsim_isa::ranges::Ranges;

/// Kind of a DRAM variable, as def.json names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VarKind {
    /// Kernel input (loaded from `--input` or the NEFF's own data).
    Input,
    /// Kernel output (written as `.npy` after the run).
    Output,
    /// Constant data shipped in the NEFF.
    File,
    /// Any other variable (scratch, state).
    Other,
}

/// The contents of a DRAM variable: bytes this core owns, or bytes shared read-only with other
/// cores (an input bound by name, a mapped file) that become the core's own on its first write.
#[derive(Clone)]
pub enum VarBytes {
    /// Owned by this core.
    Owned(Vec<u8>),
    /// Shared; copied into [`VarBytes::Owned`] by the first write.
    Shared(Arc<dyn AsRef<[u8]> + Send + Sync>),
}

impl std::fmt::Debug for VarBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VarBytes::Owned(v) => write!(f, "Owned({} bytes)", v.len()),
            VarBytes::Shared(s) => write!(f, "Shared({} bytes)", s.as_ref().as_ref().len()),
        }
    }
}

impl Default for VarBytes {
    fn default() -> Self {
        VarBytes::Owned(Vec::new())
    }
}

impl From<Vec<u8>> for VarBytes {
    fn from(v: Vec<u8>) -> Self {
        VarBytes::Owned(v)
    }
}

impl Deref for VarBytes {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            VarBytes::Owned(v) => v,
            VarBytes::Shared(s) => s.as_ref().as_ref(),
        }
    }
}

impl PartialEq for VarBytes {
    fn eq(&self, other: &Self) -> bool {
        self[..] == other[..]
    }
}

impl Eq for VarBytes {}

impl PartialEq<Vec<u8>> for VarBytes {
    fn eq(&self, other: &Vec<u8>) -> bool {
        self[..] == other[..]
    }
}

impl PartialEq<[u8]> for VarBytes {
    fn eq(&self, other: &[u8]) -> bool {
        self[..] == *other
    }
}

impl AsRef<[u8]> for VarBytes {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl VarBytes {
    /// The bytes as a vector of their own: the buffer itself when owned, a copy when shared.
    pub fn into_vec(self) -> Vec<u8> {
        match self {
            VarBytes::Owned(v) => v,
            VarBytes::Shared(s) => s.as_ref().as_ref().to_vec(),
        }
    }

    /// The bytes, writable: a shared buffer is copied first. Returns the bytes and how many
    /// were copied (0 when the buffer was already owned).
    pub fn make_mut(&mut self) -> (&mut [u8], u64) {
        let mut copied = 0;
        if let VarBytes::Shared(s) = self {
            let v = s.as_ref().as_ref().to_vec();
            copied = v.len() as u64;
            *self = VarBytes::Owned(v);
        }
        match self {
            VarBytes::Owned(v) => (v.as_mut_slice(), copied),
            VarBytes::Shared(_) => unreachable!("made owned above"),
        }
    }

    /// Whether the bytes are shared with other cores (not yet written by this one).
    pub fn is_shared(&self) -> bool {
        matches!(self, VarBytes::Shared(_))
    }
}

/// One DRAM variable: a named, sized byte buffer.
#[derive(Clone, Debug)]
pub struct DramVar {
    /// Name from def.json.
    pub name: String,
    /// Kind.
    pub kind: VarKind,
    /// Contents.
    pub bytes: VarBytes,
}

/// The bytes a core read and wrote in one variable it shares with other cores.
#[derive(Clone, Debug, Default)]
pub struct AccessLog {
    /// Bytes read.
    pub reads: Ranges,
    /// Bytes written.
    pub writes: Ranges,
}

/// The DRAM variables of a kernel, addressed by variable id.
#[derive(Clone, Debug, Default)]
pub struct Dram {
    vars: Vec<(u32, DramVar)>,
    /// Per shared variable (by id, sorted), the bytes this core accessed.
    logs: Vec<(u32, AccessLog)>,
    /// Bytes copied by writes to shared buffers since [`Dram::take_copied`].
    copied: u64,
}

impl Dram {
    /// Add a variable under `id`. Ids need not be dense.
    pub fn insert(&mut self, id: u32, var: DramVar) {
        match self.vars.binary_search_by_key(&id, |(i, _)| *i) {
            Ok(i) => self.vars[i].1 = var,
            Err(i) => self.vars.insert(i, (id, var)),
        }
    }

    /// Variable by id.
    pub fn get(&self, id: u32) -> Option<&DramVar> {
        self.vars
            .binary_search_by_key(&id, |(i, _)| *i)
            .ok()
            .map(|i| &self.vars[i].1)
    }

    /// Variable by id, writable.
    pub fn get_mut(&mut self, id: u32) -> Option<&mut DramVar> {
        self.vars
            .binary_search_by_key(&id, |(i, _)| *i)
            .ok()
            .map(move |i| &mut self.vars[i].1)
    }

    /// The bytes of variable `id`, writable (a shared buffer is copied first and the copy
    /// counted for [`Dram::take_copied`]).
    pub fn bytes_mut(&mut self, id: u32) -> Option<&mut [u8]> {
        let i = self.vars.binary_search_by_key(&id, |(i, _)| *i).ok()?;
        let (bytes, copied) = self.vars[i].1.bytes.make_mut();
        self.copied += copied;
        Some(bytes)
    }

    /// A snapshot of variable `id` without a copy: the variable's buffer becomes shared
    /// (copy on write), so a later write by this core copies the variable and leaves the
    /// snapshot as it was.
    pub fn share(&mut self, id: u32) -> Option<Arc<dyn AsRef<[u8]> + Send + Sync>> {
        let i = self.vars.binary_search_by_key(&id, |(i, _)| *i).ok()?;
        let v = &mut self.vars[i].1.bytes;
        if let VarBytes::Owned(b) = v {
            let a: Arc<dyn AsRef<[u8]> + Send + Sync> = Arc::new(std::mem::take(b));
            *v = VarBytes::Shared(a);
        }
        match v {
            VarBytes::Shared(a) => Some(a.clone()),
            VarBytes::Owned(_) => None,
        }
    }

    /// Bytes copied by writes to shared buffers since the last call.
    pub fn take_copied(&mut self) -> u64 {
        std::mem::take(&mut self.copied)
    }

    /// Take the bytes of variable `id` out of the memory (an empty variable stays behind),
    /// without a copy: the buffer this core owns, or the shared one.
    pub fn take(&mut self, id: u32) -> Option<VarBytes> {
        let i = self.vars.binary_search_by_key(&id, |(i, _)| *i).ok()?;
        Some(std::mem::take(&mut self.vars[i].1.bytes))
    }

    /// Make the whole of variable `id` the shared buffer `bytes` (as long as the variable),
    /// in place of writing them: nothing is copied, and a later write by this core copies
    /// the buffer. False (nothing changed) when the lengths differ or there is no variable.
    pub fn replace_shared(&mut self, id: u32, bytes: Arc<dyn AsRef<[u8]> + Send + Sync>) -> bool {
        let Ok(i) = self.vars.binary_search_by_key(&id, |(i, _)| *i) else {
            return false;
        };
        let v = &mut self.vars[i].1.bytes;
        if v.len() != bytes.as_ref().as_ref().len() {
            return false;
        }
        *v = VarBytes::Shared(bytes);
        true
    }

    /// Variable id by name.
    pub fn id_of(&self, name: &str) -> Option<u32> {
        self.vars
            .iter()
            .find(|(_, v)| v.name == name)
            .map(|(i, _)| *i)
    }

    /// All variables in id order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &DramVar)> {
        self.vars.iter().map(|(i, v)| (*i, v))
    }

    /// `len` bytes at `offset` of variable `id`.
    pub fn read(&self, id: u32, offset: u64, len: usize) -> Result<&[u8], AccessError> {
        let v = self.get(id).ok_or(AccessError::UnknownVar(id))?;
        let r = Self::range(v, offset, len)?;
        Ok(&v.bytes[r])
    }

    /// Writable `len` bytes at `offset` of variable `id`.
    pub fn write(&mut self, id: u32, offset: u64, len: usize) -> Result<&mut [u8], AccessError> {
        let v = self.get(id).ok_or(AccessError::UnknownVar(id))?;
        let r = Self::range(v, offset, len)?;
        let bytes = self.bytes_mut(id).ok_or(AccessError::UnknownVar(id))?;
        Ok(&mut bytes[r])
    }

    fn range(v: &DramVar, offset: u64, len: usize) -> Result<std::ops::Range<usize>, AccessError> {
        let hi = offset.saturating_add(len as u64);
        if hi > v.bytes.len() as u64 {
            return Err(AccessError::Dram {
                var: v.name.clone(),
                lo: offset as i64,
                hi: hi.min(i64::MAX as u64) as i64,
                size: v.bytes.len() as u64,
            });
        }
        Ok(offset as usize..hi as usize)
    }

    /// Record the accesses of this core to variable `id` (a variable it shares with others).
    pub fn track(&mut self, id: u32) {
        if let Err(i) = self.logs.binary_search_by_key(&id, |(i, _)| *i) {
            self.logs.insert(i, (id, AccessLog::default()));
        }
    }

    /// Whether any variable is tracked.
    pub fn tracks(&self) -> bool {
        !self.logs.is_empty()
    }

    /// Note an access to bytes `lo..hi` of variable `id` (nothing unless `id` is tracked).
    pub fn note(&mut self, id: u32, lo: u64, hi: u64, write: bool) {
        if let Ok(i) = self.logs.binary_search_by_key(&id, |(i, _)| *i) {
            let log = &mut self.logs[i].1;
            if write {
                log.writes.add(lo, hi);
            } else {
                log.reads.add(lo, hi);
            }
        }
    }

    /// Ranges held by the access logs (for the memory budget).
    pub fn logged_ranges(&self) -> u64 {
        self.logs
            .iter()
            .map(|(_, l)| (l.reads.len() + l.writes.len()) as u64)
            .sum()
    }

    /// The access log of variable `id`, when tracked.
    pub fn log_mut(&mut self, id: u32) -> Option<&mut AccessLog> {
        let i = self.logs.binary_search_by_key(&id, |(i, _)| *i).ok()?;
        Some(&mut self.logs[i].1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_bytes_are_copied_on_first_write() {
        let base: Arc<dyn AsRef<[u8]> + Send + Sync> = Arc::new(vec![1u8, 2, 3, 4]);
        let mut d = Dram::default();
        for id in [1, 2] {
            d.insert(
                id,
                DramVar {
                    name: format!("v{id}"),
                    kind: VarKind::Input,
                    bytes: VarBytes::Shared(base.clone()),
                },
            );
        }
        d.write(1, 1, 2).unwrap().copy_from_slice(&[9, 9]);
        assert_eq!(d.take_copied(), 4);
        assert_eq!(&d.get(1).unwrap().bytes[..], &[1, 9, 9, 4]);
        assert_eq!(&d.get(2).unwrap().bytes[..], &[1, 2, 3, 4]);
        assert!(d.get(2).unwrap().bytes.is_shared());
        d.write(1, 0, 1).unwrap()[0] = 0;
        assert_eq!(d.take_copied(), 0, "an owned buffer is not copied again");
        assert_eq!((*base).as_ref(), &[1, 2, 3, 4]);
    }

    #[test]
    fn only_tracked_variables_are_logged() {
        let mut d = Dram::default();
        d.track(3);
        d.note(3, 0, 8, true);
        d.note(3, 8, 16, true);
        d.note(4, 0, 8, true);
        assert_eq!(d.log_mut(3).unwrap().writes.ranges(), &[(0, 16)]);
        assert!(d.log_mut(4).is_none());
    }

    /// A shared snapshot keeps its bytes when the variable is written afterwards, and the
    /// write is counted as a copy.
    #[test]
    fn a_snapshot_survives_a_later_write() {
        let mut d = Dram::default();
        d.insert(
            1,
            DramVar {
                name: "z".into(),
                kind: VarKind::Other,
                bytes: vec![1u8, 2, 3, 4].into(),
            },
        );
        let snap = d.share(1).unwrap();
        d.write(1, 1, 2).unwrap().copy_from_slice(&[9, 9]);
        assert_eq!((*snap).as_ref(), &[1, 2, 3, 4]);
        assert_eq!(&d.get(1).unwrap().bytes[..], &[1, 9, 9, 4]);
        assert_eq!(d.take_copied(), 4);
        // A second snapshot of the now owned variable sees the write.
        assert_eq!((*d.share(1).unwrap()).as_ref(), &[1, 9, 9, 4]);
    }
}
