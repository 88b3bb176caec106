//! The journal of accepted jobs in `[daemon] state_dir`, so that a restart (SIGTERM or
//! kill -9) loses none: each job's input is written to a file of its own and its
//! acceptance appended to `journal`, both synced to disk before the submitter hears back;
//! its end is appended when it ends. Each start of a job is appended too, so that a job
//! the daemon keeps dying under is not run forever; a clean shutdown that interrupts a job
//! says so, and that start does not count. On start the journal is read back: jobs not
//! ended run again, ended ones are kept for `[daemon] keep_results`, and it is rewritten
//! with just those (and again while running, once it has grown well past them). Each line
//! carries a checksum, so a damaged one is reported and skipped. A write that fails (a full
//! disk, an I/O error, a failed sync) is cut back to the last whole record before anything
//! else is written, and the caller gets the error; where the journal cannot be rewritten at
//! start (a full disk), it is appended to as it is.

use std::{
    collections::{HashMap, HashSet},
    fs::{self, File, OpenOptions},
    io::{self, BufRead as _, BufReader, Write as _},
    path::{Path, PathBuf},
    sync::{Arc, Mutex, MutexGuard},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use base64::Engine as _;
use bellhop_plugin_sdk::dirs::write_atomically;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::job::{Outcome, Priority, Timings};

/// A job as it was accepted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Accepted {
    /// The job's id.
    pub(crate) id: String,
    /// The request id it was submitted under, where that is not its id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) request_id: Option<String>,
    pub(crate) circuit: String,
    pub(crate) partitions: usize,
    /// The witness seed of partition 0 ([`crate::JobRequest::first_seed`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) first_seed: u64,
    pub(crate) priority: Priority,
    /// The payload's digest (what makes a repeated id the same job).
    pub(crate) digest: [u8; 32],
    /// Milliseconds since the Unix epoch.
    pub(crate) at_ms: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// How a job ended, as the journal keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
enum Ended {
    Completed { proof: String, timings: Timings },
    Benchmarked { timings: Timings },
    Failed { why: String },
    Cancelled,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
enum Record {
    Accepted(Accepted),
    Ended {
        id: String,
        at_ms: u64,
        #[serde(flatten)]
        ended: Ended,
    },
    /// The job started, for the `attempt`th time.
    Started {
        id: String,
        attempt: u32,
    },
    /// A clean shutdown stopped the job before it ended: its last start does not count.
    Interrupted {
        id: String,
    },
}

/// A job read back from the journal.
pub(crate) struct Recovered {
    pub(crate) accepted: Accepted,
    /// Its input, for a job that runs again (none if the file is gone).
    pub(crate) input: Option<Vec<u8>>,
    /// How and when it ended, if it did.
    pub(crate) ended: Option<(Outcome, Duration)>,
    /// How many times it was started and the daemon stopped under it.
    pub(crate) attempts: u32,
}

/// Where records are written: the journal file (in tests, one that fails on demand).
trait Sink: Send {
    /// Writes `bytes` at the end and syncs them.
    fn append(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Cuts the file to `len` bytes and syncs it.
    fn truncate(&mut self, len: u64) -> io::Result<()>;
}

impl Sink for File {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.write_all(bytes)?;
        self.sync_data()
    }

    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.set_len(len)?;
        self.sync_data()
    }
}

/// What the journal holds of one job: what a rewrite writes back.
struct Kept {
    /// Its place in the order of acceptance.
    order: u64,
    accepted: Accepted,
    attempts: u32,
    ended: Option<(Ended, u64)>,
}

impl Kept {
    fn lines(&self) -> String {
        let id = &self.accepted.id;
        let mut lines = line(&Record::Accepted(self.accepted.clone()));
        match &self.ended {
            Some((ended, at_ms)) => {
                lines += &line(&Record::Ended { id: id.clone(), at_ms: *at_ms, ended: ended.clone() })
            }
            None if self.attempts > 0 => lines += &line(&Record::Started { id: id.clone(), attempt: self.attempts }),
            None => {}
        }
        lines
    }
}

/// The journal grows to at least this, and twice its size after the last rewrite, before
/// it is rewritten while running.
const REWRITE_FROM: u64 = 1 << 20;

/// The open journal.
pub(crate) struct Journal {
    dir: PathBuf,
    keep: Duration,
    sink: Box<dyn Sink>,
    /// Bytes of whole records in the file: a failed write is cut back to here.
    whole: u64,
    /// A write failed and is not cut back yet.
    torn: bool,
    /// Its size after the last rewrite.
    rewritten: u64,
    /// The least size at which it is rewritten while running.
    rewrite_from: u64,
    /// Every job it holds, by id.
    jobs: HashMap<String, Kept>,
    next_order: u64,
    /// Held for the daemon's life: a second daemon on the same directory is refused.
    _lock: File,
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// `bytes` in lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn checksum(json: &str) -> String {
    hex(&Sha256::digest(json.as_bytes())[..8])
}

fn line(record: &Record) -> String {
    let json = serde_json::to_string(record).expect("records serialize");
    format!("{} {json}\n", checksum(&json))
}

fn parse(text: &str) -> Result<Record, String> {
    let (sum, json) = text.split_once(' ').ok_or("no checksum")?;
    if checksum(json) != sum {
        return Err("its checksum does not match".into());
    }
    serde_json::from_str(json).map_err(|e| e.to_string())
}

/// Writes `bytes` to `path` whole and syncs it, the file and the directory's entry.
fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomically(path, bytes)?;
    sync_dir(path.parent().unwrap_or(Path::new(".")))
}

/// Syncs directory `dir`'s entries (a file made or renamed in it).
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Where job `id`'s input is kept: named by a digest of the id, which may hold any text.
fn input_path(dir: &Path, id: &str) -> PathBuf {
    dir.join("inputs").join(hex(&Sha256::digest(id.as_bytes())[..16]))
}

/// The journal as the engine's threads share it. Jobs end under the engine's state lock,
/// so their ends are queued here (a lock held for a push or a drain, nothing else) and
/// written, in order, by the next holder of the journal before its own record: no write
/// or sync happens under the state lock, and a job's end is always on disk before a later
/// acceptance of its id.
pub(crate) struct SharedJournal {
    journal: Mutex<Journal>,
    ends: Mutex<Vec<(Arc<str>, Outcome)>>,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl SharedJournal {
    pub(crate) fn new(journal: Journal) -> Self {
        Self { journal: Mutex::new(journal), ends: Mutex::default() }
    }

    /// Queues the end of job `id`, to be written by the next [`SharedJournal::write`] or
    /// [`SharedJournal::flush`].
    pub(crate) fn defer_end(&self, id: Arc<str>, outcome: Outcome) {
        locked(&self.ends).push((id, outcome));
    }

    /// Runs `write` on the journal once the queued ends are written.
    pub(crate) fn write<T>(&self, write: impl FnOnce(&mut Journal) -> T) -> T {
        let mut journal = locked(&self.journal);
        let ends = std::mem::take(&mut *locked(&self.ends));
        for (id, outcome) in ends {
            if let Err(e) = journal.end(&id, &outcome) {
                tracing::error!(job = %id, "could not journal the end of the job: {e}; after a restart it runs again");
            }
        }
        write(&mut journal)
    }

    /// Writes the queued ends, if any. Call it with the state lock released.
    pub(crate) fn flush(&self) {
        if !locked(&self.ends).is_empty() {
            self.write(|_| ());
        }
    }
}

impl Journal {
    /// Opens the journal in `dir` (made if missing) and reads it back: the jobs to run
    /// again or to keep (those that ended within `keep`), and a line per damaged entry.
    /// Input files of no job waiting to run, and temporary files a killed daemon left, are
    /// removed.
    pub(crate) fn open(dir: &Path, keep: Duration) -> io::Result<(Self, Vec<Recovered>, Vec<String>)> {
        // The inputs and proofs are the operator's alone: no other user may plant or change a job.
        bellhop_plugin_sdk::dirs::private_dir(dir)?;
        fs::create_dir_all(dir.join("inputs"))?;
        let lock = OpenOptions::new().create(true).truncate(false).write(true).open(dir.join("lock"))?;
        lock.try_lock().map_err(|_| {
            io::Error::other(format!(
                "{} is in use by another bellhop serve; give each daemon its own [daemon] state_dir",
                dir.display()
            ))
        })?;
        let path = dir.join("journal");
        let mut journal = Self {
            dir: dir.to_path_buf(),
            keep,
            sink: Box::new(OpenOptions::new().create(true).append(true).open(&path)?),
            whole: 0,
            torn: false,
            rewritten: 0,
            rewrite_from: REWRITE_FROM,
            jobs: HashMap::new(),
            next_order: 0,
            _lock: lock,
        };
        let mut damaged = Vec::new();
        for (number, text) in BufReader::new(File::open(&path)?).split(b'\n').enumerate() {
            let text = String::from_utf8_lossy(&text?).into_owned();
            if text.trim().is_empty() {
                continue;
            }
            match parse(&text) {
                Ok(record) => journal.index(record),
                Err(why) => {
                    let report = format!("{} line {}: {why}; skipped", path.display(), number + 1);
                    tracing::warn!("damaged journal entry: {report}");
                    damaged.push(report);
                }
            }
        }
        journal.sweep();
        journal.remove_orphans();
        let now = now_ms();
        let mut kept: Vec<&Kept> = journal.jobs.values().collect();
        kept.sort_by_key(|job| job.order);
        let recovered = kept
            .into_iter()
            .map(|job| {
                let id = &job.accepted.id;
                let ended = job
                    .ended
                    .clone()
                    .map(|(how, at_ms)| (how.into_outcome(), Duration::from_millis(now.saturating_sub(at_ms))));
                let input = if ended.is_none() { fs::read(input_path(dir, id)).ok() } else { None };
                Recovered { accepted: job.accepted.clone(), input, ended, attempts: job.attempts }
            })
            .collect();
        if let Err(e) = journal.rewrite() {
            // A full disk must not keep the daemon from starting: append to the file as it
            // is, cut back to its last whole line.
            tracing::warn!("could not rewrite the journal {} ({e}); appending to it as it is", path.display());
            let text = fs::read(&path)?;
            let whole = text.iter().rposition(|&b| b == b'\n').map_or(0, |at| at + 1) as u64;
            if whole < text.len() as u64 {
                journal.sink.truncate(whole)?;
            }
            (journal.whole, journal.rewritten) = (whole, whole);
        }
        Ok((journal, recovered, damaged))
    }

    /// Takes `record` into the jobs held.
    fn index(&mut self, record: Record) {
        match record {
            Record::Accepted(accepted) => {
                // An id accepted again after its first job ended is a new job.
                let order = self.next_order;
                self.next_order += 1;
                self.jobs.insert(accepted.id.clone(), Kept { order, accepted, attempts: 0, ended: None });
            }
            Record::Ended { id, at_ms, ended } => {
                if let Some(job) = self.jobs.get_mut(&id) {
                    job.ended = Some((ended, at_ms));
                }
            }
            Record::Started { id, attempt } => {
                if let Some(job) = self.jobs.get_mut(&id) {
                    job.attempts = attempt;
                }
            }
            Record::Interrupted { id } => {
                if let Some(job) = self.jobs.get_mut(&id) {
                    job.attempts = job.attempts.saturating_sub(1);
                }
            }
        }
    }

    /// Forgets the jobs that ended longer than `keep` ago.
    fn sweep(&mut self) {
        let now = now_ms();
        let keep = self.keep;
        self.jobs.retain(|_, job| {
            job.ended.as_ref().is_none_or(|(_, at_ms)| Duration::from_millis(now.saturating_sub(*at_ms)) < keep)
        });
    }

    /// Removes input files of no job waiting to run, and temporary files.
    fn remove_orphans(&self) {
        let wanted: HashSet<PathBuf> = self
            .jobs
            .values()
            .filter(|job| job.ended.is_none())
            .map(|job| input_path(&self.dir, &job.accepted.id))
            .collect();
        let inputs = fs::read_dir(self.dir.join("inputs")).into_iter().flatten().flatten().map(|e| e.path());
        let temporary = fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("journal.tmp.")));
        for orphan in inputs.filter(|p| !wanted.contains(p)).chain(temporary) {
            match fs::remove_file(&orphan) {
                Ok(()) => tracing::info!("journal: removed {}, which no job waiting to run needs", orphan.display()),
                Err(e) => tracing::warn!("journal: could not remove {}: {e}", orphan.display()),
            }
        }
    }

    /// Writes the file anew with just the jobs held, and appends to it from then on.
    fn rewrite(&mut self) -> io::Result<()> {
        self.replace_file(sync_dir)
    }

    /// [`Journal::rewrite`], the directory synced by `sync_dir` once the new file is in
    /// place. The new file is opened for appending before it is renamed over the old one,
    /// so that once the rename is done every later record goes to it, even if syncing the
    /// directory fails; if anything fails before, the old file stays as it was and in use.
    fn replace_file(&mut self, sync_dir: impl FnOnce(&Path) -> io::Result<()>) -> io::Result<()> {
        let mut jobs: Vec<&Kept> = self.jobs.values().collect();
        jobs.sort_by_key(|job| job.order);
        let text: String = jobs.into_iter().map(Kept::lines).collect();
        let path = self.dir.join("journal");
        let tmp = self.dir.join(format!("journal.tmp.{}", std::process::id()));
        let renamed = (|| {
            let _ = fs::remove_file(&tmp);
            let mut file = OpenOptions::new().create_new(true).append(true).open(&tmp)?;
            file.write_all(text.as_bytes())?;
            file.sync_all()?;
            fs::rename(&tmp, &path)?;
            Ok::<_, io::Error>(file)
        })();
        let file = renamed.inspect_err(|_| {
            let _ = fs::remove_file(&tmp);
        })?;
        self.sink = Box::new(file);
        (self.whole, self.rewritten, self.torn) = (text.len() as u64, text.len() as u64, false);
        sync_dir(&self.dir)
    }

    /// Appends `record` whole, or not at all: a failed write is cut back (now, or before
    /// the next one if that fails too) and its error returned.
    fn append(&mut self, record: Record) -> io::Result<()> {
        if self.torn {
            self.sink
                .truncate(self.whole)
                .map_err(|e| io::Error::new(e.kind(), format!("cutting back the journal's last, failed write: {e}")))?;
            self.torn = false;
        }
        let line = line(&record);
        if let Err(e) = self.sink.append(line.as_bytes()) {
            self.torn = self.sink.truncate(self.whole).is_err();
            return Err(e);
        }
        self.whole += line.len() as u64;
        self.index(record);
        if self.whole > self.rewrite_from.max(2 * self.rewritten) {
            self.sweep();
            if let Err(e) = self.rewrite() {
                tracing::warn!("could not rewrite the journal ({e}); appending to it as it is");
                self.rewritten = self.whole;
            }
        }
        Ok(())
    }

    /// Records an accepted job and its input, on disk before it returns.
    pub(crate) fn accept(&mut self, job: &Accepted, input: &[u8]) -> io::Result<()> {
        let input_path = input_path(&self.dir, &job.id);
        write_synced(&input_path, input)?;
        self.append(Record::Accepted(job.clone())).inspect_err(|_| {
            let _ = fs::remove_file(&input_path);
        })
    }

    /// Records that job `id` starts for the `attempt`th time, on disk before it returns.
    pub(crate) fn started(&mut self, id: &str, attempt: u32) -> io::Result<()> {
        self.append(Record::Started { id: id.into(), attempt })
    }

    /// Records that a clean shutdown stopped job `id` before it ended.
    pub(crate) fn interrupted(&mut self, id: &str) -> io::Result<()> {
        self.append(Record::Interrupted { id: id.into() })
    }

    /// Records how job `id` ended; its input is no longer needed.
    pub(crate) fn end(&mut self, id: &str, outcome: &Outcome) -> io::Result<()> {
        let ended = match outcome {
            Outcome::Completed { proof, timings } => {
                Ended::Completed { proof: base64::engine::general_purpose::STANDARD.encode(proof), timings: *timings }
            }
            Outcome::Benchmarked { timings } => Ended::Benchmarked { timings: *timings },
            Outcome::Failed(why) => Ended::Failed { why: why.clone() },
            Outcome::Cancelled => Ended::Cancelled,
        };
        self.append(Record::Ended { id: id.into(), at_ms: now_ms(), ended })?;
        let _ = fs::remove_file(input_path(&self.dir, id));
        Ok(())
    }

    /// Now, as the journal stamps acceptances.
    pub(crate) fn stamp() -> u64 {
        now_ms()
    }
}

impl Ended {
    fn into_outcome(self) -> Outcome {
        match self {
            Ended::Completed { proof, timings } => match base64::engine::general_purpose::STANDARD.decode(proof) {
                Ok(proof) => Outcome::Completed { proof, timings },
                Err(e) => Outcome::Failed(format!("its proof in the journal is damaged ({e}); submit it again")),
            },
            Ended::Benchmarked { timings } => Outcome::Benchmarked { timings },
            Ended::Failed { why } => Outcome::Failed(why),
            Ended::Cancelled => Outcome::Cancelled,
        }
    }
}

/// A sink whose every write and cut takes `delay` longer, as a slow disk's would.
#[cfg(test)]
struct Slow {
    inner: Box<dyn Sink>,
    delay: Duration,
}

#[cfg(test)]
impl Sink for Slow {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        std::thread::sleep(self.delay);
        self.inner.append(bytes)
    }

    fn truncate(&mut self, len: u64) -> io::Result<()> {
        std::thread::sleep(self.delay);
        self.inner.truncate(len)
    }
}

#[cfg(test)]
impl SharedJournal {
    /// Makes every later record take `delay` longer to write, as on a slow disk.
    pub(crate) fn slow_down(&self, delay: Duration) {
        let mut journal = locked(&self.journal);
        let placeholder: Box<dyn Sink> = Box::new(File::open("/dev/null").expect("/dev/null opens"));
        let inner = std::mem::replace(&mut journal.sink, placeholder);
        journal.sink = Box::new(Slow { inner, delay });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepted(id: &str) -> Accepted {
        Accepted {
            id: id.into(),
            request_id: None,
            circuit: "chain:1024".into(),
            partitions: 2,
            first_seed: 0,
            priority: Priority::Normal,
            digest: [7; 32],
            at_ms: now_ms(),
        }
    }

    #[test]
    fn jobs_survive_a_reopening_and_damaged_lines_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let keep = Duration::from_secs(3600);
        {
            let (mut journal, recovered, damaged) = Journal::open(dir.path(), keep).unwrap();
            assert!(recovered.is_empty() && damaged.is_empty());
            for id in ["a", "b", "c"] {
                journal.accept(&accepted(id), id.as_bytes()).unwrap();
            }
            let timings = Timings::default();
            journal.end("b", &Outcome::Completed { proof: vec![7; 192], timings }).unwrap();
            journal.end("c", &Outcome::Cancelled).unwrap();
            // A second daemon on the same directory is refused.
            let error = Journal::open(dir.path(), keep).err().unwrap();
            assert!(error.to_string().contains("in use by another bellhop serve"), "{error}");
        }
        let path = dir.path().join("journal");
        let mut text = fs::read_to_string(&path).unwrap();
        text.insert_str(0, "0123456789abcdef {\"record\":\"accepted\",\"id\":\"x\"}\n");
        text.push_str("not a record at all\n");
        fs::write(&path, text).unwrap();
        let (_, recovered, damaged) = Journal::open(dir.path(), keep).unwrap();
        assert_eq!(damaged.len(), 2, "{damaged:?}");
        assert!(damaged[0].contains("line 1") && damaged[0].contains("checksum"), "{damaged:?}");
        let ids: Vec<&str> = recovered.iter().map(|r| r.accepted.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        assert_eq!(recovered[0].input.as_deref(), Some(&b"a"[..]));
        assert!(recovered[0].ended.is_none());
        assert!(matches!(&recovered[1].ended, Some((Outcome::Completed { proof, .. }, _)) if proof == &vec![7; 192]));
        assert!(matches!(recovered[2].ended, Some((Outcome::Cancelled, _))));
        // The rewritten journal has the damaged lines no more.
        let (_, again, damaged) = Journal::open(dir.path(), keep).unwrap();
        assert!(damaged.is_empty());
        assert_eq!(again.len(), 3);
        // Ended jobs older than `keep` are forgotten.
        let (_, fresh, _) = Journal::open(dir.path(), Duration::ZERO).unwrap();
        assert_eq!(fresh.len(), 1);
    }

    #[test]
    fn the_state_dir_is_made_private_and_refused_where_others_may_write_it() {
        use std::os::unix::fs::PermissionsExt as _;
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("state");
        drop(Journal::open(&dir, Duration::ZERO).unwrap());
        assert_eq!(fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        let e = Journal::open(&dir, Duration::ZERO).err().unwrap().to_string();
        assert!(e.contains("writable by other users") && e.contains("chmod go-w"), "{e}");
    }

    #[test]
    fn starts_are_counted_across_reopenings_and_interrupted_ones_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let keep = Duration::from_secs(3600);
        let attempts = |recovered: &[Recovered]| -> Vec<(String, u32)> {
            recovered.iter().map(|r| (r.accepted.id.clone(), r.attempts)).collect()
        };
        {
            let (mut journal, _, _) = Journal::open(dir.path(), keep).unwrap();
            for id in ["crashes", "stopped", "fresh"] {
                journal.accept(&accepted(id), id.as_bytes()).unwrap();
            }
            journal.started("crashes", 1).unwrap();
            journal.started("stopped", 1).unwrap();
            journal.interrupted("stopped").unwrap();
        }
        let (mut journal, recovered, _) = Journal::open(dir.path(), keep).unwrap();
        let expected = [("crashes", 1), ("stopped", 0), ("fresh", 0)].map(|(id, n)| (id.to_string(), n));
        assert_eq!(attempts(&recovered), expected);
        journal.started("crashes", 2).unwrap();
        drop(journal);
        // The rewritten journal keeps the count.
        let (_, recovered, _) = Journal::open(dir.path(), keep).unwrap();
        assert_eq!(attempts(&recovered)[0], ("crashes".to_string(), 2));
        let (_, again, _) = Journal::open(dir.path(), keep).unwrap();
        assert_eq!(attempts(&again)[0], ("crashes".to_string(), 2));
    }

    /// The journal file, its writes failing half-way while `mode` is 1, its cut-backs too
    /// while it is 2.
    struct Failing {
        file: File,
        mode: std::sync::Arc<std::sync::atomic::AtomicU8>,
    }

    impl Sink for Failing {
        fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
            if self.mode.load(std::sync::atomic::Ordering::Relaxed) == 0 {
                return Sink::append(&mut self.file, bytes);
            }
            self.file.write_all(&bytes[..bytes.len() / 2])?;
            Err(io::Error::new(io::ErrorKind::StorageFull, "no space left on device (injected)"))
        }

        fn truncate(&mut self, len: u64) -> io::Result<()> {
            if self.mode.load(std::sync::atomic::Ordering::Relaxed) == 2 {
                return Err(io::Error::other("I/O error (injected)"));
            }
            Sink::truncate(&mut self.file, len)
        }
    }

    fn ids(recovered: &[Recovered]) -> Vec<&str> {
        recovered.iter().map(|r| r.accepted.id.as_str()).collect()
    }

    /// A rewrite whose directory sync fails after the new file is in place still appends
    /// to that file: no later record goes to the file the rename unlinked.
    #[test]
    fn records_after_a_rewrite_whose_directory_sync_failed_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let keep = Duration::from_secs(3600);
        {
            let (mut journal, _, _) = Journal::open(dir.path(), keep).unwrap();
            journal.accept(&accepted("before"), b"a").unwrap();
            let failed = journal.replace_file(|_| Err(io::Error::from_raw_os_error(24))).unwrap_err();
            assert_eq!(failed.raw_os_error(), Some(24), "the failure is reported");
            journal.accept(&accepted("after"), b"b").unwrap();
        }
        {
            // A rewrite that fails before its rename (its file cannot be made) leaves the
            // old file in use.
            let (mut journal, _, _) = Journal::open(dir.path(), keep).unwrap();
            let blocked = dir.path().join(format!("journal.tmp.{}", std::process::id()));
            fs::create_dir(&blocked).unwrap();
            fs::write(blocked.join("x"), b"").unwrap();
            journal.replace_file(|_| Ok(())).expect_err("the new file cannot be made");
            fs::remove_dir_all(&blocked).unwrap();
            journal.accept(&accepted("later"), b"c").unwrap();
        }
        let (_, recovered, damaged) = Journal::open(dir.path(), keep).unwrap();
        assert_eq!((ids(&recovered), damaged.len()), (vec!["before", "after", "later"], 0));
        let leftovers = fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with("journal.tmp.")));
        assert_eq!(leftovers.count(), 0);
    }

    #[test]
    fn a_failed_write_is_cut_back_before_the_next_one_and_its_job_refused() {
        use std::sync::{atomic::AtomicU8, Arc};
        let dir = tempfile::tempdir().unwrap();
        let keep = Duration::from_secs(3600);
        {
            let (mut journal, _, _) = Journal::open(dir.path(), keep).unwrap();
            journal.accept(&accepted("a"), b"a").unwrap();
            let mode = Arc::new(AtomicU8::new(1));
            let file = OpenOptions::new().append(true).open(dir.path().join("journal")).unwrap();
            journal.sink = Box::new(Failing { file, mode: Arc::clone(&mode) });
            let e = journal.accept(&accepted("b"), b"b").unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::StorageFull);
            assert!(!input_path(dir.path(), "b").exists(), "the refused job's input is not left behind");
            // The write fails and so does cutting it back: the next append cuts back first.
            mode.store(2, std::sync::atomic::Ordering::Relaxed);
            journal.end("a", &Outcome::Cancelled).unwrap_err();
            mode.store(0, std::sync::atomic::Ordering::Relaxed);
            journal.accept(&accepted("c"), b"c").unwrap();
        }
        let (_, recovered, damaged) = Journal::open(dir.path(), keep).unwrap();
        assert!(damaged.is_empty(), "{damaged:?}");
        assert_eq!(ids(&recovered), ["a", "c"]);
        assert!(recovered.iter().all(|r| r.ended.is_none()), "a's end was never written");
    }

    #[test]
    fn a_journal_that_cannot_be_rewritten_at_start_is_appended_to_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let keep = Duration::from_secs(3600);
        drop(Journal::open(dir.path(), keep).unwrap().0.accept(&accepted("a"), b"a"));
        // A torn last line, and the rewrite's temporary name taken (as a full disk fails it).
        let mut file = OpenOptions::new().append(true).open(dir.path().join("journal")).unwrap();
        file.write_all(b"0123 {\"record\":\"acc").unwrap();
        let planted = dir.path().join(format!("journal.tmp.{}", std::process::id()));
        fs::create_dir(&planted).unwrap();
        {
            let (mut journal, recovered, damaged) = Journal::open(dir.path(), keep).unwrap();
            assert_eq!((ids(&recovered), damaged.len()), (vec!["a"], 1));
            journal.accept(&accepted("b"), b"b").unwrap();
        }
        fs::remove_dir(&planted).unwrap();
        let (_, recovered, damaged) = Journal::open(dir.path(), keep).unwrap();
        assert!(damaged.is_empty(), "the torn line was cut before b was appended: {damaged:?}");
        assert_eq!(ids(&recovered), ["a", "b"]);
    }

    #[test]
    fn the_journal_is_rewritten_while_running_and_orphans_are_removed_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let journal_path = dir.path().join("journal");
        {
            let (mut journal, _, _) = Journal::open(dir.path(), Duration::ZERO).unwrap();
            journal.rewrite_from = 4096;
            let timings = Timings::default();
            for n in 0..40 {
                let id = format!("done-{n}");
                journal.accept(&accepted(&id), b"input").unwrap();
                journal.end(&id, &Outcome::Completed { proof: vec![7; 192], timings }).unwrap();
            }
            journal.accept(&accepted("waiting"), b"input").unwrap();
            let size = fs::metadata(&journal_path).unwrap().len();
            assert!(size <= 2 * 4096, "{size} bytes: ended jobs past keep_results were not dropped");
        }
        let orphan = dir.path().join("inputs").join("0123456789abcdef");
        fs::write(&orphan, b"no job's").unwrap();
        fs::write(dir.path().join("journal.tmp.1"), b"a rewrite a kill cut short").unwrap();
        let (_, recovered, _) = Journal::open(dir.path(), Duration::ZERO).unwrap();
        assert_eq!(ids(&recovered), ["waiting"]);
        assert_eq!(recovered[0].input.as_deref(), Some(&b"input"[..]));
        assert!(!orphan.exists() && !dir.path().join("journal.tmp.1").exists());
    }

    #[test]
    fn an_id_accepted_again_after_its_job_ended_is_a_new_job() {
        let dir = tempfile::tempdir().unwrap();
        let keep = Duration::from_secs(3600);
        {
            let (mut journal, _, _) = Journal::open(dir.path(), keep).unwrap();
            journal.accept(&accepted("a"), b"first").unwrap();
            journal.end("a", &Outcome::Cancelled).unwrap();
            journal.accept(&accepted("a"), b"second").unwrap();
        }
        let (_, recovered, damaged) = Journal::open(dir.path(), keep).unwrap();
        assert!(damaged.is_empty());
        assert_eq!(recovered.len(), 1);
        assert!(recovered[0].ended.is_none(), "the second job has not ended");
        assert_eq!(recovered[0].input.as_deref(), Some(&b"second"[..]));
    }
}
