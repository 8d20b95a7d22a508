//! What the other thread was doing meanwhile: its samples inside a wait described (category,
//! system call or function, user frame) and summed into an edge's activities.

use super::*;

/// What the samples of one classified stack were doing: their category (as the thread states
/// classified them), the system call or the function the user called, and the user's frame.
#[derive(Debug, Clone)]
pub(super) struct Described {
    pub(super) category: Category,
    pub(super) function: String,
    pub(super) frame: Option<Frame>,
    pub(super) in_io_call: bool,
}

/// What the other thread's samples (`samples`: indices into `profile.samples`, in time order)
/// inside `windows` (from, to: the parts of the waits it stood for, Piece::window) were doing:
/// their sampled time, and their activities, most first.
pub(super) fn activities(
    profile: &Profile,
    states: Option<&crate::analysis::states::StateReport>,
    samples: &[usize],
    windows: impl Iterator<Item = (u64, u64)>,
    described: &mut HashMap<u32, Described>,
) -> (u64, Vec<Activity>) {
    let mut sampled_ns = 0u64;
    let mut acts: BTreeMap<(Category, String, String), Activity> = BTreeMap::new();
    for (start, end) in windows {
        let first = samples.partition_point(|&s| profile.samples[s].mono_ns < start);
        for &si in &samples[first..] {
            let s = &profile.samples[si];
            if s.mono_ns > end {
                break;
            }
            // The sample's category and frames as the thread states classified it: one
            // classification for every view. Its stack decides its description too (the stack's
            // shape holds the sample's kind, system call and futex operation).
            let Some((ci, stack)) = states.and_then(|r| r.sample_stack(si)) else {
                continue;
            };
            let d = described.entry(ci).or_insert_with(|| describe(stack, s));
            sampled_ns = sampled_ns.saturating_add(s.weight_ns);
            let key = (
                d.category,
                d.function.clone(),
                d.frame.as_ref().map(Frame::display).unwrap_or_default(),
            );
            let a = acts.entry(key).or_insert_with(|| Activity {
                category: d.category,
                function: d.function.clone(),
                frame: d.frame.clone(),
                ns: 0,
                in_io_call: d.in_io_call,
            });
            a.ns = a.ns.saturating_add(s.weight_ns);
        }
    }
    let mut activities: Vec<Activity> = acts.into_values().collect();
    activities.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.function.cmp(&b.function)));
    (sampled_ns, activities)
}
/// A sample's category (as the thread states classified it), what it was doing (the system
/// call, else the function the user called) and the user's frame.
pub(super) fn describe(stack: &crate::analysis::states::SampledStack, s: &Sample) -> Described {
    let frames = &stack.frames;
    let category = stack.category;
    let syscall = s.syscall.map(|nr| syscall_name(nr, s.arg));
    let user = user_frame(frames);
    // A stack of the runtime's frames only (a sleep whose stack could not be read: only its pc
    // is known) names no user frame, rather than the C library's.
    let frame = frames.get(user).filter(|f| !is_runtime_frame(f)).cloned();
    let function = match (&syscall, s.kind) {
        (Some(name), SampleKind::Wall) => name.clone(),
        _ => {
            let i = called_frame(frames, user).unwrap_or(0);
            frames
                .get(i)
                .map(|f| match &f.function {
                    Some(n) => {
                        let q = qualified_name(n);
                        let bare = q.split('(').next().unwrap_or(q);
                        public_libc_name(bare).to_string()
                    }
                    None => f.display(),
                })
                .unwrap_or_else(|| "?".into())
        }
    };
    Described {
        category,
        function,
        frame,
        in_io_call: stack.in_io_call,
    }
}
