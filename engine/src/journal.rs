//! The journal of accepted jobs in `[daemon] state_dir`, so that a restart (SIGTERM or
//! kill -9) loses none: each job's input is written to a file of its own and its
//! acceptance appended to `journal`, both synced to disk before the submitter hears back;
//! its end is appended when it ends. Each start of a job is appended too, so that a job
//! the daemon keeps dying under is not run forever; a clean shutdown that interrupts a job
//! says so, and that start does not count. On start the journal is read back: jobs not
//! ended run again, ended ones are kept for `[daemon] keep_results`, and it is rewritten
//! with just those. Each line carries a checksum, so a damaged one is reported and skipped.

use std::{
    fs::{self, File, OpenOptions},
    io::{self, BufRead as _, BufReader, Write as _},
    path::{Path, PathBuf},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use base64::Engine as _;
use bellhop_plugin_sdk::dirs::write_atomically;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{Outcome, Priority, Timings};

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
    pub(crate) priority: Priority,
    /// The payload's digest (what makes a repeated id the same job).
    pub(crate) digest: [u8; 32],
    /// Milliseconds since the Unix epoch.
    pub(crate) at_ms: u64,
}

/// How a job ended, as the journal keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
enum Ended {
    Completed { proof: String, timings: Timings },
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

/// The open journal.
pub(crate) struct Journal {
    dir: PathBuf,
    file: File,
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
    File::open(path.parent().unwrap_or(Path::new(".")))?.sync_all()
}

/// Where job `id`'s input is kept: named by a digest of the id, which may hold any text.
fn input_path(dir: &Path, id: &str) -> PathBuf {
    dir.join("inputs").join(hex(&Sha256::digest(id.as_bytes())[..16]))
}

impl Journal {
    /// Opens the journal in `dir` (made if missing) and reads it back: the jobs to run
    /// again or to keep (those that ended within `keep`), and a line per damaged entry.
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
        let mut order: Vec<String> = Vec::new();
        let mut accepted = std::collections::HashMap::<String, Accepted>::new();
        let mut ended = std::collections::HashMap::<String, (Ended, u64)>::new();
        let mut attempts = std::collections::HashMap::<String, u32>::new();
        let mut damaged = Vec::new();
        if path.exists() {
            for (number, text) in BufReader::new(File::open(&path)?).split(b'\n').enumerate() {
                let text = String::from_utf8_lossy(&text?).into_owned();
                if text.trim().is_empty() {
                    continue;
                }
                match parse(&text) {
                    Ok(Record::Accepted(job)) => {
                        if !accepted.contains_key(&job.id) {
                            order.push(job.id.clone());
                        }
                        // An id accepted again after its first job ended is a new job.
                        ended.remove(&job.id);
                        attempts.remove(&job.id);
                        accepted.insert(job.id.clone(), job);
                    }
                    Ok(Record::Ended { id, at_ms, ended: how }) => {
                        ended.insert(id, (how, at_ms));
                    }
                    Ok(Record::Started { id, attempt }) => {
                        attempts.insert(id, attempt);
                    }
                    Ok(Record::Interrupted { id }) => {
                        if let Some(count) = attempts.get_mut(&id) {
                            *count = count.saturating_sub(1);
                        }
                    }
                    Err(why) => {
                        let report = format!("{} line {}: {why}; skipped", path.display(), number + 1);
                        tracing::warn!("damaged journal entry: {report}");
                        damaged.push(report);
                    }
                }
            }
        }
        let now = now_ms();
        let mut recovered = Vec::new();
        let mut kept = String::new();
        for id in order {
            let job = accepted.remove(&id).expect("listed above");
            let input_path = input_path(dir, &id);
            match ended.remove(&id) {
                Some((how, at_ms)) => {
                    let age = Duration::from_millis(now.saturating_sub(at_ms));
                    if age >= keep {
                        let _ = fs::remove_file(&input_path);
                        continue;
                    }
                    kept += &line(&Record::Accepted(job.clone()));
                    kept += &line(&Record::Ended { id: id.clone(), at_ms, ended: how.clone() });
                    let ended = Some((how.into_outcome(), age));
                    recovered.push(Recovered { accepted: job, input: None, ended, attempts: 0 });
                }
                None => {
                    kept += &line(&Record::Accepted(job.clone()));
                    let attempt = attempts.remove(&id).unwrap_or(0);
                    if attempt > 0 {
                        kept += &line(&Record::Started { id: id.clone(), attempt });
                    }
                    let input = fs::read(&input_path).ok();
                    recovered.push(Recovered { accepted: job, input, ended: None, attempts: attempt });
                }
            }
        }
        write_synced(&path, kept.as_bytes())?;
        let file = OpenOptions::new().append(true).open(&path)?;
        Ok((Self { dir: dir.to_path_buf(), file, _lock: lock }, recovered, damaged))
    }

    fn append(&mut self, record: &Record) -> io::Result<()> {
        self.file.write_all(line(record).as_bytes())?;
        self.file.sync_data()
    }

    /// Records an accepted job and its input, on disk before it returns.
    pub(crate) fn accept(&mut self, job: &Accepted, input: &[u8]) -> io::Result<()> {
        write_synced(&input_path(&self.dir, &job.id), input)?;
        self.append(&Record::Accepted(job.clone()))
    }

    /// Records that job `id` starts for the `attempt`th time, on disk before it returns.
    pub(crate) fn started(&mut self, id: &str, attempt: u32) -> io::Result<()> {
        self.append(&Record::Started { id: id.into(), attempt })
    }

    /// Records that a clean shutdown stopped job `id` before it ended.
    pub(crate) fn interrupted(&mut self, id: &str) -> io::Result<()> {
        self.append(&Record::Interrupted { id: id.into() })
    }

    /// Records how job `id` ended; its input is no longer needed.
    pub(crate) fn end(&mut self, id: &str, outcome: &Outcome) -> io::Result<()> {
        let ended = match outcome {
            Outcome::Completed { proof, timings } => {
                Ended::Completed { proof: base64::engine::general_purpose::STANDARD.encode(proof), timings: *timings }
            }
            Outcome::Failed(why) => Ended::Failed { why: why.clone() },
            Outcome::Cancelled => Ended::Cancelled,
        };
        self.append(&Record::Ended { id: id.into(), at_ms: now_ms(), ended })?;
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
            Ended::Failed { why } => Outcome::Failed(why),
            Ended::Cancelled => Outcome::Cancelled,
        }
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
