/**
 * The dashboard's page (served at `/`). A TS string module so that it ships in dist/ like the
 * code; its script and styles are `dashboard-script.ts` and `dashboard-style.ts`, served under
 * /assets/ (the page's Content-Security-Policy allows no inline script).
 */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>migpool</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/dashboard.css">
<script src="/assets/echarts.min.js" defer></script>
<script src="/assets/dashboard.js" defer></script>
</head>
<body>
<header class="top">
  <h1>migpool</h1>
  <span id="policy" class="policy"></span>
  <div id="counts" class="counts"></div>
  <span id="live" class="live" data-state="connecting" title="event stream">connecting</span>
</header>
<main>
  <p id="need-token" class="need-token" hidden>This service answers only with its token: open the dashboard as <code>/?token=…</code> with the token from the <code>token</code> file of its data dir (<code>migpool serve</code> prints that address).</p>
  <section class="panel" aria-labelledby="gpus-title">
    <div class="panel-head">
      <h2 id="gpus-title">GPUs</h2>
      <div class="legend">
        <span><i class="swatch busy"></i>job</span>
        <span><i class="swatch idle"></i>idle instance</span>
        <span><i class="swatch free"></i>free (no instance)</span>
        <span><i class="swatch foreign"></i>not started by migpool</span>
        <span><i class="swatch reconf"></i>reconfiguring</span>
      </div>
    </div>
    <div id="gpus" class="gpus"><p class="empty">loading…</p></div>
  </section>
  <div class="row">
    <section class="panel queue-panel" aria-labelledby="queue-title">
      <div class="panel-head"><h2 id="queue-title">Queue</h2><span id="queue-count" class="pill">0</span></div>
      <ol id="queue" class="queue"></ol>
    </section>
    <section class="panel charts-panel" aria-labelledby="charts-title">
      <div class="panel-head"><h2 id="charts-title">Utilisation and throughput</h2></div>
      <div class="charts">
        <div id="chart-util" class="chart"></div>
        <div id="chart-jobs" class="chart"></div>
      </div>
    </section>
  </div>
  <section class="panel" aria-labelledby="jobs-title">
    <div class="panel-head"><h2 id="jobs-title">Jobs</h2><span class="hint">latest 200 · click a job for its details and log</span></div>
    <div class="table-wrap">
      <table id="jobs" class="jobs">
        <thead><tr><th>ID</th><th>Name</th><th>User</th><th>State</th><th>Priority</th><th>Request</th><th>Placement</th><th>Attempt</th><th>Submitted</th><th>Run time</th><th>Exit</th><th>Progress / waiting for</th></tr></thead>
        <tbody></tbody>
      </table>
    </div>
  </section>
</main>
<aside id="details" class="drawer" hidden aria-labelledby="d-title">
  <div class="drawer-head">
    <h2 id="d-title"></h2>
    <button id="d-close" class="icon" title="close" aria-label="close">×</button>
  </div>
  <dl id="d-facts" class="facts"></dl>
  <div class="actions">
    <button id="d-cancel" class="danger">Cancel job</button>
    <span id="d-note" class="note"></span>
  </div>
  <div class="tabs" role="tablist">
    <button id="tab-stdout" data-stream="stdout" class="active" role="tab">stdout</button>
    <button id="tab-stderr" data-stream="stderr" role="tab">stderr</button>
    <span id="log-state" class="note"></span>
  </div>
  <pre id="log" class="log"></pre>
</aside>
</body>
</html>
`;
