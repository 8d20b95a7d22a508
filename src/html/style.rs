//! The page's stylesheet: light by default, dark under `prefers-color-scheme: dark`. Every colour is
//! a variable so that both schemes are defined side by side; the thread-state categories have one
//! variable each (`--c-<category>`), used by the timeline's rectangles and its legend.

pub const STYLE: &str = r#"
:root { --bg:#fdfdfc; --fg:#1d1f21; --muted:#5f646a; --card:#f1f2f4; --line:#d9dce0; --focus:#0b5fd6;
  --cpu:#4f8fd8; --alloc:#e4572e; --lock:#9b5de5; --idle:#c9ced6; --phase:rgba(40,60,90,.16); --region:rgba(230,150,30,.18); --phase-edge:#56606c; --life:#8797ab;
  --c-compute:#3a7bd5; --c-allocator:#e4572e; --c-lock:#8e44d8; --c-atomic:#e0a100; --c-io:#1a9a8a;
  --c-blocked:#8a94a3; --c-kernel_memory:#d6337a;
  --c-spinning:#a0522d; --c-runnable:#b8c4d6; --c-profiler:#d9d2b6; --c-idle:#dfe3e8;
  --high:#c0392b; --medium:#d68910; --low:#2e86c1; --info:#7f8c8d; }
@media (prefers-color-scheme: dark) {
  :root { --bg:#16181b; --fg:#e6e6e6; --muted:#a3a9b0; --card:#22252a; --line:#3a3f46; --focus:#7fb2ff;
    --cpu:#5b9be6; --alloc:#f07050; --lock:#b084f0; --idle:#3d434b; --phase:rgba(200,215,235,.16); --region:rgba(240,170,60,.18); --phase-edge:#a9b4c2; --life:#66768a;
    --c-compute:#5b9be6; --c-allocator:#f07050; --c-lock:#b084f0; --c-atomic:#f2c14e; --c-io:#3cc4b0;
    --c-blocked:#6f7a89; --c-kernel_memory:#f06ba4;
    --c-spinning:#d98a55; --c-runnable:#4d5a6e; --c-profiler:#6b6450; --c-idle:#2c3138;
    --high:#ff6b5b; --medium:#f5b041; --low:#5dade2; --info:#aab7b8; }
}
body { background:var(--bg); color:var(--fg); font:14px/1.45 system-ui,sans-serif; margin:0 auto 2em; max-width:1250px; padding:0 1em; }
h1 { font-size:1.5em; margin-bottom:.2em } h2 { font-size:1.15em; margin-top:2em; border-bottom:1px solid var(--line); }
a { color:var(--focus) }
:focus-visible { outline:3px solid var(--focus); outline-offset:2px }
.skip { position:absolute; left:-999px; top:0; background:var(--card); padding:.4em .8em; z-index:9 }
.skip:focus { left:1em }
nav.sections { position:sticky; top:0; background:var(--bg); border-bottom:1px solid var(--line); padding:.4em 0; z-index:5 }
nav.sections a { margin-right:1em }
.muted { color:var(--muted) } code { font-family:ui-monospace,monospace }
.cards { display:flex; flex-wrap:wrap; gap:.8em; margin:1em 0 }
.card { background:var(--card); border-radius:8px; padding:.6em 1em; min-width:9em }
.card b { display:block; font-size:1.35em }
table { border-collapse:collapse; width:100%; font-variant-numeric:tabular-nums }
th, td { padding:.25em .6em; border-bottom:1px solid var(--line); text-align:right; vertical-align:top }
th:first-child, td:first-child, td.l { text-align:left }
.bar { display:flex; height:14px; border-radius:3px; overflow:hidden; background:var(--idle); min-width:200px }
.bar span { display:block; height:100% }
.cpu { background:var(--cpu) } .alloc { background:var(--alloc) } .lock { background:var(--lock) }
.legend span { display:inline-block; width:.9em; height:.9em; border-radius:2px; margin:0 .3em 0 1em; vertical-align:middle }
.hist td.b { width:60% } .hist .fill { background:var(--cpu); height:10px; border-radius:2px }
.finding { border-left:6px solid var(--info); background:var(--card); border-radius:4px; padding:.5em 1em; margin:.8em 0 }
.finding.high { border-color:var(--high) } .finding.medium { border-color:var(--medium) } .finding.low { border-color:var(--low) }
.finding h3 { margin:.1em 0 .3em; font-size:1.05em }
.severity { font-size:.8em; text-transform:uppercase; letter-spacing:.05em; font-weight:bold; margin-right:.6em }
.finding dt { font-weight:bold; margin-top:.3em } .finding dd { margin-left:1.2em }
.flames > input { margin-left:1.2em } .flames > label { cursor:pointer; padding:.2em }
.flame-panel { margin-top:.6em }
.flames .flame-panel { display:none }
.flames #w-time:checked ~ #panel-time, .flames #w-calls:checked ~ #panel-calls,
.flames #w-bytes:checked ~ #panel-bytes, .flames #w-lock:checked ~ #panel-lock,
.flames #w-cpu:checked ~ #panel-cpu, .flames #w-offcpu:checked ~ #panel-offcpu { display:block }
svg.flame g.hit > rect { stroke:var(--focus); stroke-width:3 }
svg.flame text { font:11px ui-monospace,monospace; pointer-events:none }
svg.flame rect:hover { stroke:var(--fg); stroke-width:1 }
details { margin:.6em 0 } summary { cursor:pointer }
svg.timeline text { font:11px system-ui,sans-serif; fill:var(--fg) }
svg.timeline .axis { fill:var(--muted) } svg.timeline .plot { fill:var(--card); fill-opacity:.55 }
svg.timeline .phase { fill:var(--phase) } svg.timeline .region { fill:var(--region) }
svg.timeline .phase-edge { stroke:var(--phase-edge); stroke-width:1; stroke-dasharray:3 2 }
svg.timeline .life { fill:var(--life) }
.c-compute { fill:var(--c-compute); background:var(--c-compute) }
.c-allocator { fill:var(--c-allocator); background:var(--c-allocator) }
.c-lock { fill:var(--c-lock); background:var(--c-lock) }
.c-atomic { fill:var(--c-atomic); background:var(--c-atomic) }
.c-io { fill:var(--c-io); background:var(--c-io) }
.c-blocked { fill:var(--c-blocked); background:var(--c-blocked) }
.c-kernel_memory { fill:var(--c-kernel_memory); background:var(--c-kernel_memory) }
.c-spinning { fill:var(--c-spinning); background:var(--c-spinning) }
.c-runnable { fill:var(--c-runnable); background:var(--c-runnable) }
.c-profiler { fill:var(--c-profiler); background:var(--c-profiler) }
.c-idle { fill:var(--c-idle); background:var(--c-idle) }
"#;
