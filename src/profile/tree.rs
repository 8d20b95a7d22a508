//! A run of several processes: finding its profiles on disk, and the process tree they form.
//!
//! `stallscope run` writes the launched process's profile at ROOT (`stallscope-NAME-PID.prof`, or
//! `-o FILE`) and the profile of every other process of the run into the directory
//! `ROOT.children/` (earlier exec images of the launched process as `ROOT.exec-N`), see
//! docs/FORMAT.md, "One run, several processes". Given ROOT or that directory, `discover` finds
//! them all; a directory of loose profiles (the layout before runs had directories) works too.
//! `build` turns the processes' images into a tree: images of one pid chained by exec form one
//! process, and each process hangs under the process whose pid is its parent's and which was
//! alive when it started.

use super::Profile;
use super::format::{EndHow, MAGIC};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The suffix `stallscope run` gives the run's directory next to the root profile.
pub const CHILDREN_SUFFIX: &str = ".children";

/// The profile files of one run (or of one directory of profiles).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFiles {
    /// The launched process's profile, when known.
    pub root: Option<PathBuf>,
    /// The directory the other profiles were found in.
    pub dir: Option<PathBuf>,
    /// The other profiles, sorted by path.
    pub others: Vec<PathBuf>,
}

impl RunFiles {
    /// Every profile, the root first.
    pub fn all(&self) -> Vec<PathBuf> {
        self.root.iter().chain(&self.others).cloned().collect()
    }

    /// Just one profile and no run directory: the report of a single process, as always.
    pub fn is_single(&self) -> bool {
        self.root.is_some() && self.dir.is_none() && self.others.is_empty()
    }
}

/// The run directory that belongs to a root profile at `root`.
pub fn children_dir(root: &Path) -> PathBuf {
    let mut s = root.as_os_str().to_owned();
    s.push(CHILDREN_SUFFIX);
    PathBuf::from(s)
}

/// The profiles of the run named by `path`: a root profile (with its `.children` directory if it
/// has one), such a directory (with the root profile next to it), or any directory of profiles
/// (those in it and in the run directories inside it).
pub fn discover(path: &Path) -> anyhow::Result<RunFiles> {
    let meta = std::fs::metadata(path)
        .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", path.display()))?;
    if !meta.is_dir() {
        let dir = children_dir(path);
        let (dir, others) = if dir.is_dir() {
            let others = profiles_in(&dir)?;
            (Some(dir), others)
        } else {
            (None, Vec::new())
        };
        return Ok(RunFiles {
            root: Some(path.to_path_buf()),
            dir,
            others,
        });
    }
    let text = path.as_os_str().to_string_lossy();
    let trimmed = text.trim_end_matches('/');
    if let Some(root) = trimmed.strip_suffix(CHILDREN_SUFFIX) {
        let root = PathBuf::from(root);
        return Ok(RunFiles {
            root: root.is_file().then_some(root),
            dir: Some(path.to_path_buf()),
            others: profiles_in(path)?,
        });
    }
    // A directory of profiles: each profile in it, and the contents of the run directories.
    let mut others = profiles_in(path)?;
    let mut entries: Vec<PathBuf> = read_dir_sorted(path)?;
    entries.retain(|p| p.is_dir() && p.to_string_lossy().ends_with(CHILDREN_SUFFIX));
    for dir in entries {
        others.extend(profiles_in(&dir)?);
    }
    if others.is_empty() {
        anyhow::bail!("no stallscope profile in the directory {}", path.display());
    }
    others.sort();
    Ok(RunFiles {
        root: None,
        dir: Some(path.to_path_buf()),
        others,
    })
}

fn read_dir_sorted(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| anyhow::anyhow!("cannot read the directory {}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .collect();
    out.sort();
    Ok(out)
}

/// The regular files in `dir` that start like a profile (whatever their names), sorted.
fn profiles_in(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    Ok(read_dir_sorted(dir)?
        .into_iter()
        .filter(|p| p.is_file() && starts_like_a_profile(p))
        .collect())
}

fn starts_like_a_profile(path: &Path) -> bool {
    let mut head = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && &head == MAGIC
}

/// What the tree needs to know of one process image (one profile file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub path: PathBuf,
    pub pid: u32,
    pub ppid: u32,
    /// Wall-clock start and end (or last flush), ns since the epoch: comparable across processes.
    pub start_ns: u64,
    pub end_ns: u64,
    /// The image ended by exec: the next image of the same pid is the same process.
    pub ended_by_exec: bool,
}

impl Image {
    pub fn of(path: &Path, p: &Profile) -> Image {
        let start_ns = p.process.start_realtime_ns;
        Image {
            path: path.to_path_buf(),
            pid: p.process.pid,
            ppid: p.process.ppid,
            start_ns,
            end_ns: start_ns.saturating_add(p.wall_ns()),
            ended_by_exec: p.end.is_some_and(|e| e.how == EndHow::Exec),
        }
    }
}

/// One process: its images in exec order, and its place in the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    pub pid: u32,
    pub ppid: u32,
    /// Indices into `Tree::images`, in the order they ran.
    pub images: Vec<usize>,
    /// Index into `Tree::processes`.
    pub parent: Option<usize>,
    /// Indices into `Tree::processes`, by start time.
    pub children: Vec<usize>,
    /// Its parent was not profiled (or it was re-parented once its parent ended): it hangs under
    /// the run's launched process instead.
    pub adopted: bool,
}

#[derive(Debug, Clone)]
pub struct Tree {
    pub images: Vec<Image>,
    pub processes: Vec<Process>,
    /// Processes without a parent, by start time (the launched process first when known).
    pub roots: Vec<usize>,
}

impl Tree {
    /// The process whose images include image `i`.
    pub fn process_of_image(&self, i: usize) -> Option<usize> {
        self.processes.iter().position(|p| p.images.contains(&i))
    }

    /// Every process once, parents before their children: (process index, depth).
    pub fn walk(&self) -> Vec<(usize, usize)> {
        let mut out = Vec::with_capacity(self.processes.len());
        let mut stack: Vec<(usize, usize)> = self.roots.iter().rev().map(|&r| (r, 0)).collect();
        while let Some((p, depth)) = stack.pop() {
            out.push((p, depth));
            for &c in self.processes[p].children.iter().rev() {
                stack.push((c, depth + 1));
            }
        }
        out
    }

    fn first_start(&self, p: usize) -> u64 {
        self.images[self.processes[p].images[0]].start_ns
    }

    fn last_end(&self, p: usize) -> u64 {
        let images = &self.processes[p].images;
        self.images[images[images.len() - 1]].end_ns
    }
}

/// The tree of `images`. `root` is the launched process's image, when known: processes whose
/// parent is not among the images hang under its process (`adopted`).
pub fn build(images: Vec<Image>, root: Option<usize>) -> Tree {
    // Images of one pid, in start order: an image that ended by exec continues into the next.
    let mut order: Vec<usize> = (0..images.len()).collect();
    order.sort_by_key(|&i| (images[i].pid, images[i].start_ns, i));
    let mut processes: Vec<Process> = Vec::new();
    for &i in &order {
        let continues = processes.last().is_some_and(|p: &Process| {
            let last = &images[*p.images.last().expect("a process has an image")];
            p.pid == images[i].pid && last.ended_by_exec && last.start_ns <= images[i].start_ns
        });
        if continues {
            processes.last_mut().expect("checked").images.push(i);
        } else {
            processes.push(Process {
                pid: images[i].pid,
                ppid: images[i].ppid,
                images: vec![i],
                parent: None,
                children: Vec::new(),
                adopted: false,
            });
        }
    }
    let mut tree = Tree {
        images,
        processes,
        roots: Vec::new(),
    };
    let root_process = root.and_then(|i| tree.process_of_image(i));
    let count = tree.processes.len();
    // The processes of each pid (a few when pids are reused): finding parents stays linear in
    // the number of processes (a run may have thousands).
    let mut by_pid: std::collections::HashMap<u32, Vec<usize>> = std::collections::HashMap::new();
    for (q, process) in tree.processes.iter().enumerate() {
        by_pid.entry(process.pid).or_default().push(q);
    }
    for p in 0..count {
        if Some(p) == root_process {
            continue;
        }
        let start = tree.first_start(p);
        // The latest process with the parent's pid that started before this one (and, when there
        // are several, one still alive then): pids are reused.
        let candidates = by_pid
            .get(&tree.processes[p].ppid)
            .map_or(&[][..], Vec::as_slice);
        let parent = candidates
            .iter()
            .copied()
            .filter(|&q| q != p && (tree.first_start(q), q) < (start, p))
            .max_by_key(|&q| (tree.last_end(q) >= start, tree.first_start(q)));
        match (parent, root_process) {
            (Some(q), _) => tree.processes[p].parent = Some(q),
            (None, Some(r)) => {
                tree.processes[p].parent = Some(r);
                tree.processes[p].adopted = true;
            }
            (None, None) => {}
        }
    }
    // A cycle is impossible (a parent starts before its child); children and roots by start.
    for p in 0..count {
        if let Some(q) = tree.processes[p].parent {
            tree.processes[q].children.push(p);
        } else {
            tree.roots.push(p);
        }
    }
    let starts: Vec<u64> = (0..count).map(|p| tree.first_start(p)).collect();
    for p in 0..count {
        tree.processes[p].children.sort_by_key(|&c| (starts[c], c));
    }
    tree.roots
        .sort_by_key(|&r| (Some(r) != root_process, starts[r], r));
    tree
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(name: &str, pid: u32, ppid: u32, start: u64, end: u64, exec: bool) -> Image {
        Image {
            path: PathBuf::from(name),
            pid,
            ppid,
            start_ns: start,
            end_ns: end,
            ended_by_exec: exec,
        }
    }

    /// (pid, depth, image names) along the walk.
    fn shape(tree: &Tree) -> Vec<(u32, usize, Vec<String>)> {
        tree.walk()
            .into_iter()
            .map(|(p, depth)| {
                let proc_ = &tree.processes[p];
                let names = proc_
                    .images
                    .iter()
                    .map(|&i| tree.images[i].path.display().to_string())
                    .collect();
                (proc_.pid, depth, names)
            })
            .collect()
    }

    #[test]
    fn one_process_alone() {
        let tree = build(vec![image("a", 10, 1, 5, 9, false)], Some(0));
        assert_eq!(shape(&tree), [(10, 0, vec!["a".to_string()])]);
        assert!(!tree.processes[0].adopted);
    }

    #[test]
    fn images_chained_by_exec_are_one_process_and_a_reused_pid_is_another() {
        let images = vec![
            image("sh", 10, 1, 100, 110, true),
            image("make", 10, 1, 110, 500, false),
            image("cc-1", 11, 10, 200, 300, false),
            image("cc-2", 11, 10, 350, 400, false), // pid 11 reused: a second compiler
        ];
        let tree = build(images, Some(1));
        assert_eq!(
            shape(&tree),
            [
                (10, 0, vec!["sh".to_string(), "make".to_string()]),
                (11, 1, vec!["cc-1".to_string()]),
                (11, 1, vec!["cc-2".to_string()]),
            ]
        );
    }

    #[test]
    fn children_hang_under_the_parent_alive_when_they_started() {
        let images = vec![
            image("root", 10, 1, 0, 1000, false),
            image("old-20", 20, 10, 10, 50, false),
            image("new-20", 20, 10, 60, 900, false), // pid 20 reused
            image("child-of-new", 30, 20, 70, 80, false),
            image("grandchild", 40, 30, 75, 79, false),
        ];
        let tree = build(images, Some(0));
        assert_eq!(
            shape(&tree),
            [
                (10, 0, vec!["root".to_string()]),
                (20, 1, vec!["old-20".to_string()]),
                (20, 1, vec!["new-20".to_string()]),
                (30, 2, vec!["child-of-new".to_string()]),
                (40, 3, vec!["grandchild".to_string()]),
            ]
        );
    }

    #[test]
    fn orphans_are_adopted_by_the_launched_process_or_stand_alone_without_it() {
        let images = vec![
            image("daemon", 50, 1, 20, 30, false), // re-parented to init before its first flush
            image("root", 10, 7, 0, 100, false),
        ];
        let tree = build(images.clone(), Some(1));
        assert_eq!(
            shape(&tree),
            [
                (10, 0, vec!["root".to_string()]),
                (50, 1, vec!["daemon".to_string()])
            ]
        );
        let daemon = tree.process_of_image(0).unwrap();
        assert!(tree.processes[daemon].adopted);
        // Without a known root (a directory of loose profiles): a forest, by start time.
        let tree = build(images, None);
        assert_eq!(
            shape(&tree),
            [
                (10, 0, vec!["root".to_string()]),
                (50, 0, vec!["daemon".to_string()])
            ]
        );
    }

    #[test]
    fn a_process_is_never_its_own_parent() {
        // Two processes naming each other as parent (impossible, but a file may say anything).
        let images = vec![
            image("a", 1, 2, 10, 20, false),
            image("b", 2, 1, 10, 20, false),
        ];
        let tree = build(images, None);
        assert_eq!(tree.walk().len(), 2, "both appear exactly once");
        assert_eq!(tree.roots.len(), 1);
    }

    fn write_profile_like(path: &Path) {
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&[0; 16]);
        std::fs::write(path, bytes).unwrap();
    }

    #[test]
    fn discovery_from_the_root_from_its_directory_and_from_a_directory_of_profiles() {
        let base =
            std::env::temp_dir().join(format!("stallscope-tree-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        let root = base.join("stallscope-make-10.prof");
        write_profile_like(&root);
        let single = base.join("stallscope-true-99.prof");
        write_profile_like(&single);
        let dir = children_dir(&root);
        std::fs::create_dir(&dir).unwrap();
        let a = dir.join("stallscope-cc1-12.prof");
        let b = dir.join("stallscope-make-10.prof.exec-1");
        write_profile_like(&a);
        write_profile_like(&b);
        std::fs::write(dir.join("notes.txt"), "not a profile").unwrap();

        let from_root = discover(&root).unwrap();
        assert_eq!(from_root.root.as_deref(), Some(root.as_path()));
        assert_eq!(from_root.dir.as_deref(), Some(dir.as_path()));
        assert_eq!(from_root.others, [a.clone(), b.clone()]);
        assert!(!from_root.is_single());
        let from_dir = discover(&dir).unwrap();
        assert_eq!(from_dir, from_root);
        let mut with_slash = dir.as_os_str().to_owned();
        with_slash.push("/");
        assert_eq!(
            discover(Path::new(&with_slash)).unwrap().root,
            from_root.root
        );

        let alone = discover(&single).unwrap();
        assert!(alone.is_single());
        assert_eq!(alone.all(), std::slice::from_ref(&single));

        let everything = discover(&base).unwrap();
        assert_eq!(everything.root, None);
        assert_eq!(everything.others.len(), 4, "{everything:?}");

        let empty = base.join("empty");
        std::fs::create_dir(&empty).unwrap();
        let err = discover(&empty).unwrap_err().to_string();
        assert!(err.contains("no stallscope profile"), "{err}");
        let err = discover(&base.join("missing")).unwrap_err().to_string();
        assert!(err.contains("cannot open"), "{err}");
        std::fs::remove_dir_all(&base).unwrap();
    }
}
