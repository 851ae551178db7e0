/**
 * The dashboard's script (served at `/assets/dashboard.js`): plain DOM JavaScript, no framework
 * and no build step. It reads the REST API, follows /v1/events (server-sent events) and refreshes
 * every 10 s anyway (every 3 s while the event stream is down). Data is put in the page with
 * textContent only. A page opened with `?token=...` keeps the token in this tab's sessionStorage,
 * removes it from the address bar, and sends it as `Authorization: Bearer` with every call (the
 * API needs it for reads too; the event stream gets it as `?token=`, EventSource sends no headers).
 */
export const DASHBOARD_SCRIPT = String.raw`
(function () {
  'use strict';
  var EVENT_TYPES = ['job-submitted', 'job-starting', 'job-started', 'job-finished', 'job-requeued',
    'job-cancel-requested', 'job-preempting', 'gpu-reconfiguring', 'gpu-reconfigured', 'gpu-reconfigure-failed', 'service-started',
    'mps-backoff', 'mps-slowdown'];
  var FINAL = { succeeded: true, failed: true, cancelled: true };
  var LOG_LIMIT = 1 << 20;

  var token = '';
  (function takeToken() {
    var params = new URLSearchParams(location.search);
    try { token = sessionStorage.getItem('migpool-token') || ''; } catch (e) { token = ''; }
    if (params.has('token')) {
      token = params.get('token') || '';
      try { sessionStorage.setItem('migpool-token', token); } catch (e) { /* private mode: keep it in memory */ }
      params.delete('token');
      var rest = params.toString();
      history.replaceState(null, '', location.pathname + (rest ? '?' + rest : '') + location.hash);
    }
  })();

  var state = { jobs: {}, recent: [], queue: [], queueNext: null, gpus: [], stats: null, selected: null, live: false };
  var log = { id: null, stream: 'stdout', offset: 0, done: false, timer: null, busy: false };
  var charts = { util: null, jobs: null };

  function $(id) { return document.getElementById(id); }
  function el(tag, props, children) {
    var node = document.createElement(tag);
    if (props) for (var k in props) {
      if (k === 'text') node.textContent = props[k];
      else if (k === 'className') node.className = props[k];
      else if (k === 'style') for (var s in props.style) node.style.setProperty(s, props.style[s]);
      else if (k.slice(0, 2) === 'on') node.addEventListener(k.slice(2), props[k]);
      else node.setAttribute(k, props[k]);
    }
    (children || []).forEach(function (c) { if (c != null) node.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }

  function api(path, options) {
    options = options || {};
    var headers = options.headers || {};
    if (token) headers.Authorization = 'Bearer ' + token;
    options.headers = headers;
    return fetch(path, options).then(function (res) {
      if (res.status === 401) showNeedToken();
      return res.text().then(function (text) {
        var body = null;
        try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
        if (!res.ok) throw new Error(body && body.error ? body.error.message : 'HTTP ' + res.status);
        return body;
      });
    });
  }

  function showNeedToken() {
    var box = $('need-token');
    if (box) box.hidden = false;
  }

  function age(ms) {
    if (ms == null || !isFinite(ms)) return '';
    var s = Math.max(0, Math.round(ms / 1000));
    if (s < 60) return s + 's';
    var m = Math.floor(s / 60);
    if (m < 60) return m + 'm ' + (s % 60) + 's';
    var h = Math.floor(m / 60);
    if (h < 48) return h + 'h ' + (m % 60) + 'm';
    return Math.floor(h / 24) + 'd ' + (h % 24) + 'h';
  }
  function hue(id) {
    var h = 0;
    for (var i = 0; i < id.length; i++) h = (h * 31 + id.charCodeAt(i)) >>> 0;
    return (h * 47) % 360;
  }
  /** '45% · 1200/s · eta 3m 10s' for a running job that reports progress; '' otherwise. */
  function progressText(job) {
    var p = job.progress;
    if (!p || FINAL[job.state]) return '';
    var parts = [p.fraction != null ? Math.floor(p.fraction * 100) + '%' : p.samples + ' samples'];
    if (p.samplesPerSecond != null) parts.push(p.samplesPerSecond.toFixed(p.samplesPerSecond < 10 ? 1 : 0) + ' samples/s');
    if (p.etaSeconds != null) parts.push('eta ' + age(p.etaSeconds * 1000));
    return parts.join(' · ');
  }
  function jobColor(id) { return 'hsl(' + hue(String(id)) + ' 62% 47%)'; }
  function jobLabel(id) {
    var job = state.jobs[id];
    return job ? job.spec.name : 'job ' + id;
  }
  function request(spec) {
    var r = spec.resources || {};
    if (r.profile) return typeof r.profile === 'object' ? r.profile.atLeast + ' or more' : r.profile;
    if (r.memory != null) return r.memory + ' GiB';
    if (r.gpus != null) return r.gpus + (r.gpus === 1 ? ' GPU' : ' GPUs');
    return '';
  }
  function placement(p) {
    if (!p) return '';
    if (p.kind === 'instance') return 'GPU ' + p.gpu + ' · ' + p.profile + ' @' + p.start;
    var mps = p.mps ? (p.mps.clientPriority === 1 ? ' low' : '') + (p.mps.activeThreadPercentage != null ? ' ' + p.mps.activeThreadPercentage + '%' : '') +
      (p.mps.neighbours.length > 0 ? ' with ' + p.mps.neighbours.join(',') : '') : '';
    return 'GPU ' + p.gpus.join(',') + (p.sharing !== 'exclusive' ? ' (' + p.sharing + mps + ')' : '');
  }
  function runtime(job) {
    if (job.startedAt == null) return '';
    return age((job.endedAt != null ? job.endedAt : Date.now()) - job.startedAt);
  }
  function stateBadge(s) { return el('span', { className: 'state ' + s, text: s }); }

  // ---- header -------------------------------------------------------------------------------
  function renderHeader() {
    var s = state.stats;
    if (!s) return;
    $('policy').textContent = 'policy ' + s.policy + ' · up ' + age(Date.now() - s.startedAt);
    var by = {};
    s.jobsByState.forEach(function (r) { by[r.state] = (by[r.state] || 0) + r.count; });
    var last = s.timeline.length ? s.timeline[s.timeline.length - 1] : null;
    var items = [['queued', by.queued || 0], ['running', (by.running || 0) + (by.starting || 0)], ['succeeded', by.succeeded || 0],
      ['failed', by.failed || 0], ['cancelled', by.cancelled || 0]];
    if (last) items.push(['utilisation', Math.round(last.utilization * 100) + '%']);
    clear($('counts'));
    items.forEach(function (it) { $('counts').appendChild(el('span', { className: 'count', 'data-count': it[0] }, [it[0], el('b', { text: String(it[1]) })])); });
  }

  function setLive(mode) {
    var node = $('live');
    node.setAttribute('data-state', mode);
    node.textContent = mode === 'live' ? 'live' : mode === 'down' ? 'reconnecting' : 'connecting';
  }

  // ---- GPUs ---------------------------------------------------------------------------------
  function profileSlices(profile, fallback) {
    var m = /^(\d+)g\./.exec(profile);
    return m ? Number(m[1]) : fallback;
  }
  function sliceBlock(kind, grow, top, bottom, jobId, title) {
    var node = el('div', { className: 'slice ' + kind, title: title, 'data-width': String(grow) },
      [el('span', { className: 'profile', text: top }), el('span', { className: 'job', text: bottom })]);
    if (jobId != null) {
      node.setAttribute('data-job', jobId);
      node.style.setProperty('background', jobColor(jobId));
      node.addEventListener('click', function () { openJob(jobId); });
    }
    return node;
  }
  var OTHERS = "another user's job";
  // Processes migpool did not start: their pids for an admin, else only how many (GET /v1/gpus).
  function foreignText(where) {
    var pids = where.foreignPids || [], n = where.foreignProcesses || pids.length;
    if (!n) return null;
    var what = pids.length ? (pids.length === 1 ? 'process ' : 'processes ') + pids.join(', ') : n + (n === 1 ? ' process' : ' processes');
    return what + ' (not started by migpool)';
  }
  function renderGpus() {
    var root = clear($('gpus'));
    if (!state.gpus.length) { root.appendChild(el('p', { className: 'empty', text: 'no GPUs' })); return; }
    state.gpus.forEach(function (g) {
      var bar = el('div', { className: 'bar' });
      if (g.migEnabled) {
        // Blocks in placement order, each as wide as its compute slices; compute slices without an
        // instance show as "not partitioned" where the placements leave a gap, the rest at the end.
        var insts = g.instances.slice().sort(function (a, b) { return a.start - b.start; });
        var left = g.slices - insts.reduce(function (n, inst) { return n + profileSlices(inst.profile, inst.size); }, 0);
        var freeBlock = function (n) {
          return sliceBlock('free', n, n + (n === 1 ? ' slice' : ' slices'), 'free', null, n + ' compute slice(s) without a GPU instance');
        };
        var cursor = 0;
        insts.forEach(function (inst) {
          var gap = Math.min(inst.start - cursor, left);
          if (gap > 0) { bar.appendChild(freeBlock(gap)); left -= gap; }
          cursor = Math.max(cursor, inst.start + inst.size);
          var where = inst.profile + ' at placement ' + inst.start + (inst.uuid ? '\n' + inst.uuid : '');
          var foreign = foreignText(inst);
          if (foreign) where += '\n' + foreign + ': no job starts here until ' + (inst.foreignProcesses === 1 ? 'it ends' : 'they end');
          if (inst.job != null) {
            bar.appendChild(sliceBlock('busy', profileSlices(inst.profile, inst.size), inst.profile, jobLabel(inst.job), inst.job, where + '\njob ' + inst.job + ': ' + jobLabel(inst.job)));
          } else if (inst.busy) {
            // Another user's job: occupied, its id not ours to see.
            bar.appendChild(sliceBlock('busy', profileSlices(inst.profile, inst.size), inst.profile, OTHERS, null, where + '\n' + OTHERS));
          } else if (foreign) {
            bar.appendChild(sliceBlock('foreign', profileSlices(inst.profile, inst.size), inst.profile, foreign, null, where));
          } else {
            bar.appendChild(sliceBlock('idle', profileSlices(inst.profile, inst.size), inst.profile, 'idle', null, where + '\nidle'));
          }
        });
        if (left > 0) bar.appendChild(freeBlock(left));
      } else if (foreignText(g) && !g.wholeGpuJobs.length && !g.wholeGpuOtherJobs) {
        bar.appendChild(sliceBlock('foreign', 1, 'whole GPU', foreignText(g), null, 'MIG off, ' + foreignText(g) + ': no job starts here until ' + (g.foreignProcesses === 1 ? 'it ends' : 'they end')));
      } else if (g.wholeGpuJobs.length || g.wholeGpuOtherJobs) {
        var shared = g.wholeGpuJobs.length + (g.wholeGpuOtherJobs || 0) > 1 ? 'whole GPU, shared' : 'whole GPU';
        g.wholeGpuJobs.forEach(function (id) {
          bar.appendChild(sliceBlock('busy', 1, shared, jobLabel(id), id, 'job ' + id + ' on the whole GPU'));
        });
        for (var k = 0; k < (g.wholeGpuOtherJobs || 0); k++) bar.appendChild(sliceBlock('busy', 1, shared, OTHERS, null, OTHERS + ' on the whole GPU'));
      } else {
        bar.appendChild(sliceBlock('idle', 1, 'whole GPU', 'idle', null, 'MIG off, no job'));
      }
      bar.style.setProperty('grid-template-columns', Array.prototype.map.call(bar.children, function (c) {
        return 'minmax(0, ' + c.getAttribute('data-width') + 'fr)';
      }).join(' '));
      var ruler = el('div', { className: 'ruler', title: g.slices + ' compute slices' });
      for (var i = 0; i < g.slices; i++) ruler.appendChild(el('i'));
      var head = el('div', { className: 'gpu-head' }, [
        el('strong', { text: 'GPU ' + g.index }),
        el('span', { className: 'name', text: g.name }),
        el('span', { className: 'badge' + (g.migEnabled ? ' mig' : ''), text: g.migEnabled ? 'MIG' : 'MIG off' }),
        g.reconfiguring ? el('span', { className: 'badge reconf', text: 'reconfiguring' }) : null,
      ]);
      var f = g.repartitionFailure;
      var failure = f ? el('p', { className: 'gpu-failure', text: 're-partition failed ' + f.failures + '× in a row: ' + f.error + ' (next try in ' + age(f.retryAt - Date.now()) + ')' }) : null;
      var lost = g.unreachable ? el('p', { className: 'gpu-failure', text: g.unreachable + ': no job starts here until it answers' }) : null;
      root.appendChild(el('div', { className: 'gpu' + (g.reconfiguring ? ' reconfiguring' : ''), 'data-gpu': String(g.index), title: g.uuid }, [head, bar, ruler, lost, failure]));
    });
  }

  // ---- queue and jobs -----------------------------------------------------------------------
  function renderQueue() {
    var root = clear($('queue'));
    // The queue's first page: more wait when the page has a next one.
    $('queue-count').textContent = state.queue.length + (state.queueNext != null ? '+' : '');
    if (!state.queue.length) { root.appendChild(el('li', { className: 'empty', text: 'no job waiting' })); return; }
    var now = Date.now();
    state.queue.forEach(function (job) {
      root.appendChild(el('li', { 'data-job': job.id, onclick: function () { openJob(job.id); } }, [
        el('span', { className: 'id', text: '#' + job.id }),
        el('span', { className: 'dot', style: { background: jobColor(job.id) } }),
        el('span', { className: 'qname', text: job.spec.name }),
        job.owner ? el('span', { className: 'owner', text: job.owner }) : null,
        el('span', { className: 'req ' + (job.spec.priority === 'background' ? 'bg' : 'fg'), text: request(job.spec) + (job.spec.priority === 'background' ? ' · bg' : '') }),
        el('span', { className: 'wait', title: 'waiting', text: age(now - job.submittedAt) }),
        job.pending ? el('span', { className: 'why', text: job.pending }) : null,
      ]));
    });
    if (state.queueNext != null) root.appendChild(el('li', { className: 'more', text: 'more jobs wait after these ' + state.queue.length + ': list them all with migpool jobs --state queued' }));
  }

  function renderJobs() {
    var body = clear($('jobs').tBodies[0]);
    if (!state.recent.length) {
      body.appendChild(el('tr', {}, [el('td', { colspan: '12', className: 'empty', text: 'no jobs yet: submit one with migpool submit FILE' })]));
      return;
    }
    var now = Date.now();
    state.recent.forEach(function (job) {
      body.appendChild(el('tr', { 'data-job': job.id, className: job.id === state.selected ? 'selected' : '', onclick: function () { openJob(job.id); } }, [
        el('td', { text: job.id }),
        el('td', {}, [el('span', { className: 'dot', style: { background: jobColor(job.id) } }), job.spec.name]),
        el('td', { className: 'owner', text: job.owner || '' }),
        el('td', {}, [stateBadge(job.state)]),
        el('td', { className: job.spec.priority === 'background' ? 'bg' : 'fg', text: job.spec.priority }),
        el('td', { text: request(job.spec) }),
        el('td', { text: placement(job.placement) }),
        el('td', { text: String(job.attempt) }),
        el('td', { text: age(now - job.submittedAt) + ' ago' }),
        el('td', { text: runtime(job) }),
        el('td', { text: job.exitCode == null ? '' : String(job.exitCode) }),
        el('td', { className: 'note', text: job.state === 'queued' ? (job.pending || '') : progressText(job) }),
      ]));
    });
  }

  // ---- charts -------------------------------------------------------------------------------
  function renderCharts() {
    var s = state.stats;
    if (!s) return;
    if (!window.echarts) {
      ['chart-util', 'chart-jobs'].forEach(function (id) {
        if (!$(id).firstChild) $(id).appendChild(el('p', { className: 'empty', text: 'charts unavailable (echarts not served)' }));
      });
      return;
    }
    if (!charts.util) {
      charts.util = window.echarts.init($('chart-util'));
      charts.jobs = window.echarts.init($('chart-jobs'));
      window.addEventListener('resize', function () { charts.util.resize(); charts.jobs.resize(); });
    }
    var t = s.timeline;
    var common = {
      animation: false,
      grid: { left: 44, right: 48, top: 44, bottom: 50 },
      tooltip: { trigger: 'axis' },
      xAxis: { type: 'time', splitNumber: 4, axisLabel: { color: '#6b7383', hideOverlap: true } },
    };
    charts.util.setOption(Object.assign({}, common, {
      title: { text: 'Busy compute slices', textStyle: { fontSize: 13, fontWeight: 600 } },
      yAxis: { type: 'value', min: 0, max: 100, axisLabel: { formatter: '{value}%', color: '#6b7383' } },
      series: [{ name: 'utilisation', type: 'line', showSymbol: false, areaStyle: { opacity: 0.15 }, color: '#2f6fed',
        data: t.map(function (p) { return [p.t, Math.round(p.utilization * 1000) / 10]; }) }],
    }), true);
    charts.jobs.setOption(Object.assign({}, common, {
      title: { text: 'Jobs', textStyle: { fontSize: 13, fontWeight: 600 } },
      legend: { bottom: 0, textStyle: { fontSize: 11 } },
      yAxis: [{ type: 'value', name: 'jobs', minInterval: 1, axisLabel: { color: '#6b7383' } },
        { type: 'value', name: 'per hour', axisLabel: { color: '#6b7383' }, splitLine: { show: false } }],
      series: [
        { name: 'running', type: 'line', step: 'end', showSymbol: false, color: '#1f9d55', data: t.map(function (p) { return [p.t, p.running]; }) },
        { name: 'queued', type: 'line', step: 'end', showSymbol: false, color: '#c98a0a', data: t.map(function (p) { return [p.t, p.queued]; }) },
        { name: 'finished / h', type: 'line', yAxisIndex: 1, showSymbol: false, color: '#7a4fc2', data: t.map(function (p) { return [p.t, p.throughputJobsPerHour]; }) },
      ],
    }), true);
  }

  // ---- details and log ----------------------------------------------------------------------
  function fact(name, value) { return value === '' || value == null ? [] : [el('dt', { text: name }), el('dd', { text: String(value) })]; }
  function renderDetails() {
    var id = state.selected;
    if (id == null) return;
    var job = state.jobs[id];
    if (!job) return;
    clear($('d-title')).appendChild(document.createTextNode('#' + job.id + ' ' + job.spec.name + ' '));
    $('d-title').appendChild(stateBadge(job.state));
    var dl = clear($('d-facts'));
    var fmt = function (t) { return t == null ? '' : new Date(t).toLocaleString(); };
    [].concat(
      fact('user', job.owner),
      fact('command', job.spec.command.join(' ')),
      fact('workdir', job.spec.workdir),
      fact('workload', job.spec.workload),
      fact('request', request(job.spec)),
      fact('priority', job.spec.priority),
      fact('labels', job.spec.labels ? Object.keys(job.spec.labels).map(function (k) { return k + '=' + job.spec.labels[k]; }).join(', ') : ''),
      fact('after', job.spec.after ? job.spec.after.map(function (d) { return '#' + d; }).join(', ') : ''),
      fact('array', job.spec.array && typeof job.spec.array === 'object' ? job.spec.array.range + ' index ' + job.spec.array.index : ''),
      fact('placement', placement(job.placement)),
      fact('devices', job.placement ? job.placement.devices.join(', ') : ''),
      fact('attempt', job.attempt + (job.spec.retries ? ' of ' + (job.spec.retries + 1) : '') + (job.preemptions ? ' (' + job.preemptions + ' preempted)' : '')),
      fact('waiting', job.state === 'queued' ? (job.pending || '') : ''),
      fact('progress', progressText(job)),
      fact('submitted', fmt(job.submittedAt)),
      fact('started', fmt(job.startedAt)),
      fact('ended', fmt(job.endedAt)),
      fact('exit code', job.exitCode),
      fact('reason', job.reason)
    ).forEach(function (n) { dl.appendChild(n); });
    var cancel = $('d-cancel');
    var final = !!FINAL[job.state];
    cancel.hidden = final;
    cancel.disabled = !token || job.cancelRequested;
    if (!final) $('d-note').textContent = !token ? 'open the dashboard with ?token=… (from the data dir) to cancel' : job.cancelRequested ? 'stop requested' : '';
    else $('d-note').textContent = '';
  }

  function stopLog() { if (log.timer) clearTimeout(log.timer); log.timer = null; }
  function startLog(id, stream) {
    stopLog();
    log.id = id; log.stream = stream; log.offset = 0; log.done = false;
    clear($('log'));
    $('log-state').textContent = 'loading…';
    ['stdout', 'stderr'].forEach(function (s) { $('tab-' + s).classList.toggle('active', s === stream); });
    pollLog();
  }
  function pollLog() {
    var id = log.id, stream = log.stream;
    if (id == null || log.busy) return;
    log.busy = true;
    api('/v1/jobs/' + encodeURIComponent(id) + '/logs?stream=' + stream + '&offset=' + log.offset).then(function (chunk) {
      log.busy = false;
      if (log.id !== id || log.stream !== stream) return;
      var pre = $('log');
      var atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
      if (chunk.text) {
        pre.appendChild(document.createTextNode(chunk.text));
        while (pre.textContent.length > LOG_LIMIT && pre.firstChild && pre.childNodes.length > 1) pre.removeChild(pre.firstChild);
        if (atBottom) pre.scrollTop = pre.scrollHeight;
      }
      log.offset = chunk.nextOffset;
      log.done = chunk.done;
      $('log-state').textContent = chunk.done ? 'end of log' : 'following…';
      if (!pre.firstChild && chunk.done) pre.appendChild(document.createTextNode('(empty)'));
      if (!chunk.done) log.timer = setTimeout(pollLog, chunk.text ? 250 : 1000);
    }, function (err) {
      log.busy = false;
      if (log.id !== id) return;
      $('log-state').textContent = err.message;
      log.timer = setTimeout(pollLog, 3000);
    });
  }

  function openJob(id) {
    id = String(id);
    var show = function () {
      state.selected = id;
      $('details').hidden = false;
      renderDetails();
      renderJobs();
      startLog(id, 'stdout');
    };
    if (state.jobs[id]) show();
    else api('/v1/jobs/' + encodeURIComponent(id)).then(function (job) { state.jobs[id] = job; show(); }, function () { /* gone */ });
  }
  function closeJob() {
    state.selected = null;
    stopLog();
    log.id = null;
    $('details').hidden = true;
    renderJobs();
  }

  function cancelSelected() {
    var id = state.selected;
    if (id == null || !token) return;
    $('d-cancel').disabled = true;
    $('d-note').textContent = 'cancelling…';
    api('/v1/jobs/' + encodeURIComponent(id) + '/cancel', { method: 'POST', headers: { Authorization: 'Bearer ' + token } }).then(function (job) {
      state.jobs[id] = job;
      renderDetails();
      scheduleRefresh();
    }, function (err) {
      $('d-note').textContent = err.message;
      $('d-cancel').disabled = false;
    });
  }

  // ---- loading ------------------------------------------------------------------------------
  var refreshing = null, again = false, refreshTimer = null;
  function refresh() {
    if (refreshing) { again = true; return refreshing; }
    refreshing = Promise.all([
      api('/v1/gpus'), api('/v1/jobs?order=desc&limit=200'), api('/v1/jobs?state=queued&limit=500'), api('/v1/stats'),
    ]).then(function (r) {
      state.gpus = r[0].gpus;
      state.recent = r[1].jobs;
      state.queue = r[2].jobs;
      state.queueNext = r[2].next;
      state.stats = r[3];
      state.recent.concat(state.queue).forEach(function (j) { state.jobs[j.id] = j; });
      renderHeader(); renderGpus(); renderQueue(); renderJobs(); renderCharts(); renderDetails();
      document.body.setAttribute('data-loaded', String(Date.now()));
      if (state.selected != null && !state.jobs[state.selected]) {
        return api('/v1/jobs/' + encodeURIComponent(state.selected)).then(function (job) { state.jobs[job.id] = job; renderDetails(); }, function () {});
      }
    }).catch(function (err) {
      setLive('down');
      $('live').textContent = 'service unreachable: ' + err.message;
    }).then(function () {
      refreshing = null;
      if (again) { again = false; scheduleRefresh(); }
    });
    return refreshing;
  }
  function scheduleRefresh() {
    if (refreshTimer) return;
    refreshTimer = setTimeout(function () { refreshTimer = null; refresh(); }, 150);
  }

  function connect() {
    if (!window.EventSource) return;
    if (!token) return;
    var es = new EventSource('/v1/events?token=' + encodeURIComponent(token));
    es.onopen = function () { state.live = true; setLive('live'); scheduleRefresh(); };
    es.onerror = function () { state.live = false; setLive('down'); };
    var onEvent = function (msg) {
      var ev = null;
      try { ev = JSON.parse(msg.data); } catch (e) { return; }
      document.body.setAttribute('data-last-event', String(ev.seq));
      if (ev.jobId != null && ev.jobId === state.selected && log.done === false && !log.timer && !log.busy) pollLog();
      scheduleRefresh();
    };
    es.onmessage = onEvent;
    EVENT_TYPES.forEach(function (t) { es.addEventListener(t, onEvent); });
  }

  document.addEventListener('DOMContentLoaded', function () {
    $('d-close').addEventListener('click', closeJob);
    $('d-cancel').addEventListener('click', cancelSelected);
    document.addEventListener('keydown', function (e) { if (e.key === 'Escape') closeJob(); });
    ['stdout', 'stderr'].forEach(function (s) {
      $('tab-' + s).addEventListener('click', function () { if (state.selected != null) startLog(state.selected, s); });
    });
    refresh();
    connect();
    (function tick() {
      setTimeout(function () { refresh().then(tick); }, state.live ? 10000 : 3000);
    })();
  });
})();
`;
