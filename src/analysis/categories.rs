//! The states a thread's time can be in (the category vocabulary every view and finding speaks),
//! their JSON keys, glyphs and words.

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Category {
    #[default]
    Compute,
    Allocator,
    Lock,
    Atomic,
    Io,
    Blocked,
    KernelMemory,
    /// Busy-waiting: `pause` loops, spinlock acquisition, `sched_yield` loops.
    Spinning,
    /// Runnable, waiting on a run queue for a CPU (the kernel's run-queue delay).
    Runnable,
    /// stallscope's own work inside the thread (a heap snapshot walking the heap, a stack it
    /// unwinds outside a hooked call): the profiler's cost, not the program's.
    Profiler,
    /// A runtime's worker waiting for work (rayon, tokio, TBB: yielding, spinning or asleep):
    /// the runtime's design, never a cause (runtime_waits.json, role idle).
    Idle,
}

/// How many categories there are: the length of per-category arrays.
pub const CATEGORY_COUNT: usize = 11;

/// Every state a thread's time can be in; views iterate over it (a new state reaches them all).
pub const CATEGORIES: [Category; CATEGORY_COUNT] = [
    Category::Compute,
    Category::Allocator,
    Category::Lock,
    Category::Atomic,
    Category::Io,
    Category::Blocked,
    Category::KernelMemory,
    Category::Spinning,
    Category::Runnable,
    Category::Profiler,
    Category::Idle,
];

/// The categories' JSON keys (and names in the rules file), in `CATEGORIES` order.
pub const CATEGORY_KEYS: [&str; CATEGORY_COUNT] = [
    "compute",
    "allocator",
    "lock",
    "atomic",
    "io",
    "blocked",
    "kernel_memory",
    "spinning",
    "runnable",
    "profiler",
    "idle",
];

impl Category {
    /// The JSON key (and the name in the rules file).
    pub fn key(self) -> &'static str {
        CATEGORY_KEYS[self as usize]
    }

    /// One character per time slice in the text timeline.
    pub fn glyph(self) -> char {
        match self {
            Category::Compute => '=',
            Category::Allocator => 'A',
            Category::Lock => 'L',
            Category::Atomic => '@',
            Category::Io => 'I',
            Category::Blocked => '.',
            Category::KernelMemory => 'K',
            Category::Spinning => 'S',
            Category::Runnable => 'r',
            Category::Profiler => 'p',
            Category::Idle => 'i',
        }
    }

    pub(crate) fn from_key(key: &str) -> Option<Category> {
        CATEGORIES.iter().copied().find(|c| c.key() == key)
    }

    /// The index of the category in per-category arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// Words for the time spent in it, for sentences ("the biggest other part is lock waits").
    pub fn words(self) -> &'static str {
        match self {
            Category::Compute => "computation",
            Category::Allocator => "the allocator",
            Category::Lock => "lock waits",
            Category::Atomic => "atomic operations",
            Category::Io => "I/O",
            Category::Blocked => "blocking (sleeps, condition variables, joins)",
            Category::KernelMemory => "kernel memory work (page faults, mmap)",
            Category::Spinning => "spinning (busy-waiting)",
            Category::Runnable => "waiting for a CPU (runnable)",
            Category::Profiler => "stallscope's own work (heap snapshots)",
            Category::Idle => "idle runtime workers (waiting for work)",
        }
    }
}

/// Time per category, indexed by `Category::index`.
pub type PerCategory<T> = [T; CATEGORY_COUNT];

/// The categories whose stacks the report lists per thread (`state_sites`), and how many of
/// each; the findings read the same lists.
pub const SITE_CATEGORIES: [Category; 3] = [Category::Lock, Category::Allocator, Category::Atomic];
pub const SITES_PER_CATEGORY: usize = 5;
