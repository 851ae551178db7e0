/** The dashboard's stylesheet (served at `/assets/dashboard.css`). */
export const DASHBOARD_CSS = `
:root {
  --bg: #f3f4f7; --panel: #fff; --ink: #1d2330; --muted: #6b7383; --line: #e2e5eb;
  --top: #1c2230; --accent: #2f6fed; --ok: #1f9d55; --bad: #d64545; --warn: #c98a0a; --idle: #eef0f4;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  font-size: 14px; color: var(--ink); background: var(--bg);
}
* { box-sizing: border-box; }
body { margin: 0; }
h1, h2 { margin: 0; font-weight: 600; }
h1 { font-size: 18px; letter-spacing: .02em; }
h2 { font-size: 15px; }
button { font: inherit; cursor: pointer; }
.top { display: flex; align-items: center; gap: 16px; padding: 10px 20px; background: var(--top); color: #fff; position: sticky; top: 0; z-index: 5; }
.policy { color: #aeb6c7; font-size: 13px; }
.counts { display: flex; gap: 8px; flex: 1; flex-wrap: wrap; }
.count { background: rgba(255,255,255,.08); border-radius: 12px; padding: 2px 10px; font-size: 12px; color: #dfe4ee; }
.count b { color: #fff; margin-left: 4px; font-variant-numeric: tabular-nums; }
.live { font-size: 12px; padding: 2px 10px 2px 20px; border-radius: 12px; position: relative; background: rgba(255,255,255,.08); }
.live::before { content: ""; position: absolute; left: 8px; top: 50%; width: 7px; height: 7px; margin-top: -3.5px; border-radius: 50%; background: var(--warn); }
.live[data-state="live"]::before { background: #3ddc84; }
.live[data-state="down"]::before { background: var(--bad); }
main { padding: 16px 20px 40px; display: flex; flex-direction: column; gap: 16px; max-width: 1500px; margin: 0 auto; }
.panel { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; box-shadow: 0 1px 2px rgba(20,30,50,.04); min-width: 0; }
.panel-head { display: flex; align-items: center; gap: 10px; margin-bottom: 12px; }
.hint { color: var(--muted); font-size: 12px; }
.pill { background: var(--idle); border-radius: 10px; padding: 1px 8px; font-size: 12px; color: var(--muted); font-variant-numeric: tabular-nums; }
.row { display: grid; grid-template-columns: minmax(260px, 1fr) 2fr; gap: 16px; }
@media (max-width: 900px) { .row { grid-template-columns: 1fr; } }
.legend { margin-left: auto; display: flex; gap: 14px; color: var(--muted); font-size: 12px; }
.legend span { display: inline-flex; align-items: center; gap: 5px; }
.swatch { display: inline-block; width: 14px; height: 10px; border-radius: 2px; }
.swatch.busy { background: hsl(215 70% 55%); }
.swatch.idle { background: var(--idle); border: 1px dashed #b8bfcc; }
.swatch.free { background: repeating-linear-gradient(45deg, #f6f7f9 0 3px, #e3e6ec 3px 6px); }
.swatch.reconf { background: repeating-linear-gradient(45deg, #fff3d6 0 3px, #f1c35c 3px 6px); }
.swatch.foreign { background: repeating-linear-gradient(135deg, #6b7280 0 3px, #5b6270 3px 6px); }
.gpus { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: 12px; }
.gpu { border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; position: relative; }
.gpu-head { display: flex; align-items: baseline; gap: 8px; margin-bottom: 8px; }
.gpu-head .name { color: var(--muted); font-size: 12px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.badge { font-size: 11px; border-radius: 4px; padding: 1px 6px; background: var(--idle); color: var(--muted); white-space: nowrap; }
.badge.mig { background: #e6efff; color: #2756b8; }
.badge.reconf { background: #fff0cc; color: #8a5d00; }
.bar { display: grid; grid-auto-flow: column; column-gap: 3px; height: 64px; }
.slice { min-width: 0; border-radius: 4px; padding: 5px 7px; display: flex; flex-direction: column; justify-content: space-between; overflow: hidden; color: #fff; cursor: default; }
.slice .profile { font-size: 11px; opacity: .9; white-space: nowrap; }
.slice .job { font-weight: 600; font-size: 13px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.slice.busy { cursor: pointer; }
.slice.busy:hover { filter: brightness(1.08); }
.slice.idle { background: var(--idle); border: 1px dashed #b8bfcc; color: var(--muted); }
.slice.idle .job { font-weight: 400; font-style: italic; }
.slice.foreign { background: repeating-linear-gradient(135deg, #6b7280 0 8px, #5b6270 8px 16px); }
.slice.free { background: repeating-linear-gradient(45deg, #f6f7f9 0 6px, #e9ebf0 6px 12px); color: var(--muted); border: 1px solid var(--line); }
.gpu.reconfiguring .bar { opacity: .55; }
.gpu.reconfiguring::after { content: "reconfiguring…"; position: absolute; inset: 38px 12px auto 12px; height: 64px; display: flex; align-items: center; justify-content: center; font-weight: 600; color: #8a5d00; border-radius: 4px; background: repeating-linear-gradient(45deg, rgba(255,243,214,.75) 0 10px, rgba(241,195,92,.45) 10px 20px); animation: slide 1.2s linear infinite; background-size: 28px 28px; }
@keyframes slide { to { background-position: 28px 0; } }
.ruler { display: flex; gap: 3px; margin-top: 4px; }
.ruler i { flex: 1; height: 3px; background: var(--line); border-radius: 2px; }
.queue { list-style: none; margin: 0; padding: 0; max-height: 330px; overflow: auto; }
.queue li { display: flex; align-items: center; gap: 8px; padding: 6px 4px; border-bottom: 1px solid var(--line); cursor: pointer; }
.queue li:hover { background: #f7f9fc; }
.queue li.more { color: var(--muted); font-size: 12px; cursor: default; }
.queue .id { color: var(--muted); font-variant-numeric: tabular-nums; min-width: 2.5em; }
.queue .qname { font-weight: 600; flex: 1; min-width: 0; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.queue .owner, td.owner { color: var(--muted); font-size: 12px; }
.queue .req, .queue .wait { color: var(--muted); font-size: 12px; white-space: nowrap; }
.empty { color: var(--muted); font-style: italic; margin: 6px 0; }
.charts { display: grid; grid-template-columns: 1fr 1fr; gap: 10px; }
@media (max-width: 1100px) { .charts { grid-template-columns: 1fr; } }
.chart { height: 260px; min-width: 0; }
.chart .empty { padding-top: 100px; text-align: center; }
.table-wrap { overflow-x: auto; }
table.jobs { width: 100%; border-collapse: collapse; font-variant-numeric: tabular-nums; }
.jobs th { text-align: left; font-weight: 600; color: var(--muted); font-size: 12px; padding: 6px 8px; border-bottom: 1px solid var(--line); white-space: nowrap; }
.jobs td { padding: 6px 8px; border-bottom: 1px solid var(--line); white-space: nowrap; }
.jobs tbody tr { cursor: pointer; }
.jobs tbody tr:hover { background: #f7f9fc; }
.jobs tbody tr.selected { background: #eaf1ff; }
.dot { display: inline-block; width: 8px; height: 8px; border-radius: 50%; margin-right: 6px; vertical-align: middle; }
.state { font-size: 12px; border-radius: 4px; padding: 1px 7px; font-weight: 500; }
.state.queued { background: #eef0f4; color: #4a5263; }
.state.starting { background: #fff0cc; color: #8a5d00; }
.state.running { background: #e6efff; color: #2756b8; }
.state.succeeded { background: #e3f6ea; color: #17703e; }
.state.failed { background: #fde8e8; color: #a32626; }
.state.cancelled { background: #f0eaf7; color: #5e3f8a; }
.bg { color: #7a4fc2; } .fg { color: var(--ink); }
.drawer { position: fixed; top: 0; right: 0; bottom: 0; width: min(720px, 100vw); background: var(--panel); border-left: 1px solid var(--line); box-shadow: -8px 0 24px rgba(20,30,50,.12); padding: 16px 18px; display: flex; flex-direction: column; gap: 10px; z-index: 10; }
.drawer[hidden] { display: none; }
.drawer-head { display: flex; align-items: center; gap: 10px; }
.drawer-head h2 { flex: 1; font-size: 16px; }
button.icon { border: none; background: none; font-size: 22px; line-height: 1; color: var(--muted); }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 14px; margin: 0; font-size: 13px; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; word-break: break-word; }
.actions { display: flex; align-items: center; gap: 10px; }
button.danger { border: 1px solid var(--bad); color: var(--bad); background: #fff; border-radius: 5px; padding: 4px 12px; }
button.danger:hover:not(:disabled) { background: #fdeeee; }
button:disabled { opacity: .45; cursor: not-allowed; }
.note { color: var(--muted); font-size: 12px; }
.tabs { display: flex; gap: 4px; align-items: center; border-bottom: 1px solid var(--line); }
.tabs button { border: none; background: none; padding: 6px 12px; color: var(--muted); border-bottom: 2px solid transparent; margin-bottom: -1px; }
.tabs button.active { color: var(--ink); border-bottom-color: var(--accent); font-weight: 600; }
.tabs .note { margin-left: auto; }
.log { flex: 1; margin: 0; overflow: auto; background: #161b26; color: #d7dce6; border-radius: 6px; padding: 10px 12px; font: 12px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; white-space: pre-wrap; word-break: break-all; }
.need-token { margin: 0 0 12px; padding: 10px 14px; border-radius: 8px; background: #fff4e5; color: #7a4b00; border: 1px solid #f0c98a; }
.gpu-failure { margin: 6px 0 0; font-size: 12px; color: #a33; }
.queue li { flex-wrap: wrap; }
.queue li .why { flex-basis: 100%; font-size: 12px; color: #666; }
td.note { font-size: 12px; color: #555; }
`;
