//! The run's session directory: the index the interposers append their profile paths to, and the
//! pack of fork children's whole profiles, unpacked into files.

use super::*;

/// A temporary directory holding the index the interposers append their profile paths to.
pub(super) struct Session {
    pub(super) dir: PathBuf,
    pub(super) index: PathBuf,
    /// INDEX-pack: the whole profiles of fork children that ended before they made a file
    /// (preload/writer.c, ss_pack_write), as "PID PPID LEN PATH\n" and LEN bytes each ("LEN+":
    /// the records' checksums are left to the supervisor, ss_pack_bare).
    pub(super) pack: PathBuf,
    /// How far the pack has been read (it is renamed to PACK.read at the first read).
    pub(super) pack_read: std::cell::Cell<usize>,
}

impl Session {
    pub(super) fn create() -> Result<Session> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir =
            std::env::temp_dir().join(format!("stallscope-run-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let index = dir.join("index");
        std::fs::File::create(&index).with_context(|| format!("creating {}", index.display()))?;
        let pack = dir.join("index-pack");
        std::fs::File::create(&pack).with_context(|| format!("creating {}", pack.display()))?;
        Ok(Session {
            dir,
            index,
            pack,
            pack_read: std::cell::Cell::new(0),
        })
    }

    /// Writes the profiles in the pack to their files, each noted in the index as the child would
    /// have. The pack is renamed first, so that a child ending later makes its own file (an entry
    /// written by a child that opened the pack just before is read at the session's end).
    pub(super) fn unpack(&self) {
        let read = self.pack.with_extension("read");
        if self.pack_read.get() == 0 && std::fs::symlink_metadata(&read).is_err() {
            let _ = std::fs::rename(&self.pack, &read);
        }
        // Read entry by entry: a program that forks a million children makes a big pack.
        let Ok(mut file) = std::fs::File::open(&read) else {
            return;
        };
        let mut at = self.pack_read.get();
        if file.seek(std::io::SeekFrom::Start(at as u64)).is_err() {
            return;
        }
        let mut input = std::io::BufReader::new(file);
        let mut lines = String::new();
        let mut line = Vec::new();
        loop {
            line.clear();
            let Ok(n) = (&mut input).take(4096).read_until(b'\n', &mut line) else {
                break;
            };
            if n == 0 || line.last() != Some(&b'\n') {
                break; // the end, or a line cut short
            }
            let text = String::from_utf8_lossy(&line[..n - 1]).into_owned();
            let mut parts = text.splitn(4, ' ');
            let (Some(pid), Some(ppid), Some(len), Some(path)) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                break; // after an entry cut short (a full disk) what follows cannot be told apart
            };
            // "LEN+": a child that only exited left its records' checksums to us (its CPU time
            // is the program's; ss_pack_bare), computed here as the interposer would have.
            let (len, unsealed) = match len.strip_suffix('+') {
                Some(len) => (len, true),
                None => (len, false),
            };
            let Ok(len) = len.parse::<usize>() else {
                break;
            };
            let mut bytes = vec![0u8; len.min(1 << 28)];
            if len > 1 << 28
                || input.read_exact(&mut bytes).is_err()
                || !bytes.starts_with(b"STALLSCP")
            {
                break;
            }
            if unsealed {
                crate::profile::fix_checksums(&mut bytes);
            }
            at += n + len;
            if let Some(written) = write_new(Path::new(path), &bytes) {
                lines.push_str(&format!("{pid} {ppid} {}\n", written.display()));
            }
        }
        self.pack_read.set(at);
        if !lines.is_empty()
            && let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(&self.index)
        {
            let _ = f.write_all(lines.as_bytes());
        }
    }

    /// (pid, path) of every profile written, in order, keeping only files that still exist.
    pub(super) fn profiles(&self) -> Vec<(u32, PathBuf)> {
        let text = std::fs::read_to_string(&self.index).unwrap_or_default();
        let mut out: Vec<(u32, PathBuf)> = Vec::new();
        // A run of thousands of short processes has thousands of lines: a set, not a scan.
        let mut seen: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
        for line in text.lines() {
            let mut parts = line.splitn(3, ' ');
            let (Some(pid), Some(_ppid), Some(path)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            if path.starts_with('#') {
                continue; // a note (Session::notes)
            }
            let (Ok(pid), path) = (pid.parse::<u32>(), PathBuf::from(path)) else {
                continue;
            };
            if !seen.contains(&path) && path.exists() {
                seen.insert(path.clone());
                out.push((pid, path));
            }
        }
        out
    }
}

impl Session {
    /// The interposers' notes ("PID PPID #note TEXT" lines: a program run unprofiled), each once.
    pub(super) fn notes(&self) -> Vec<String> {
        let text = std::fs::read_to_string(&self.index).unwrap_or_default();
        let mut out: Vec<String> = Vec::new();
        for line in text.lines() {
            if let Some(note) = line
                .splitn(3, ' ')
                .nth(2)
                .and_then(|r| r.strip_prefix("#note "))
                && !out.iter().any(|n| n == note)
            {
                out.push(note.to_string());
            }
        }
        out
    }
}

/// Writes `bytes` to a new file at `path`, or at its next free name as the interposer would have
/// chosen it (NAME.N.prof), never over an existing file; the path written.
pub(super) fn write_new(path: &Path, bytes: &[u8]) -> Option<PathBuf> {
    use std::os::unix::fs::OpenOptionsExt;
    for attempt in 0..100 {
        let candidate = match (attempt, path.to_str().and_then(|p| p.strip_suffix(".prof"))) {
            (0, _) => path.to_path_buf(),
            (n, Some(stem)) => PathBuf::from(format!("{stem}.{n}.prof")),
            (_, None) => return None,
        };
        let open = || {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o644)
                .open(&candidate)
        };
        // The run's directory exists only once a process has written there (the interposer's
        // `ss_create_profile`): the first profile unpacked into it makes it.
        let opened = match open() {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                candidate.parent().map_or(Err(e), |dir| {
                    std::fs::create_dir_all(dir).and_then(|()| open())
                })
            }
            other => other,
        };
        match opened {
            Ok(mut f) => return f.write_all(bytes).ok().map(|()| candidate),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(_) => return None,
        }
    }
    None
}

impl Drop for Session {
    fn drop(&mut self) {
        self.unpack(); // entries that came after the first read: their files, unlisted
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
