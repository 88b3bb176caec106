//! `bellhop serve` as a child process on loopback or a unix socket, for the daemon tests.

use std::{
    ffi::OsStr,
    io::{BufRead as _, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    time::{Duration, Instant},
};

use crate::build_dir;

/// A running `bellhop serve`; killed if still running when dropped.
pub struct Daemon {
    child: Child,
    /// Its gRPC address: `127.0.0.1:PORT` or `unix:///path`.
    pub addr: String,
    /// Its HTTP status address (`127.0.0.1:PORT`), if served.
    pub status: Option<String>,
    /// Its log (stderr).
    pub log: PathBuf,
}

impl Daemon {
    /// Starts `bellhop serve` with the config `toml`, listening on `listen` (`127.0.0.1:0`
    /// for a free port, or `unix:///path`), and with `status` on a free loopback port for
    /// HTTP too; `dir` holds its config and log.
    pub fn start(dir: &Path, toml: &str, listen: &str, status: bool) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        let config = dir.join("bellhop.toml");
        std::fs::write(&config, toml).unwrap();
        let status = if status { "127.0.0.1:0" } else { "" };
        let args = [OsStr::new("--config"), config.as_os_str()];
        Self::serve(dir, args.into_iter().chain(["--listen", listen, "--status-listen", status].map(OsStr::new)))
    }

    /// Starts `bellhop serve ARGS`, its log in `dir`.
    pub fn serve<'a>(dir: &Path, args: impl IntoIterator<Item = &'a OsStr>) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        let log = dir.join("serve.log");
        let mut child = Command::new(build_dir().join("bellhop"))
            .arg("serve")
            .args(args)
            .env_remove("BELLHOP_PLUGIN_DIR")
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("the bellhop binary is built (scripts/test.sh builds it before the tests)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let addr = line
            .split("gRPC on ")
            .nth(1)
            .and_then(|rest| rest.split(';').next())
            .unwrap_or_else(|| {
                panic!("bellhop serve did not start: {line}\n{}", std::fs::read_to_string(&log).unwrap())
            })
            .to_string();
        let status = line.split("status on http://").nth(1).and_then(|rest| rest.split('/').next()).map(str::to_string);
        Self { child, addr, status, log }
    }

    /// Kills the daemon with SIGKILL, as the OOM killer does, and reaps it.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Sends SIGTERM and waits (at most `limit`) for the daemon to exit.
    pub fn terminate(mut self, limit: Duration) -> ExitStatus {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(start.elapsed() < limit, "bellhop serve did not exit within {limit:?} of SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
