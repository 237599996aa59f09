// The script of the `sluice report --html` page (user/report/report_html.h
// describes the page). It reads the report from the JSON in
// #sluice-report-data and builds every part with createElement and
// textContent: the data is trace text (thread and slice names are chosen by
// whoever ran on the traced machine), so none of it is ever parsed as markup.
//
// Each part is drawn in its own try block, so a broken part writes its error
// into #script-errors and the others still draw; <body> gets
// data-rendered="ok" only when every part drew (tests read both).
//
// Pictures: the CPU timeline (up to ~100k cells) is drawn on one canvas per
// CPU, cheap at any size; the histogram, slices and runs (up to 20000 each)
// are SVG elements, one per item, so that hovering finds the item under the
// pointer without hit-testing code.
'use strict';

(function () {
  const SVG_NS = 'http://www.w3.org/2000/svg';
  const LABEL_WIDTH = 208; // .lane-label's width and padding (report_page.css).
  const TOP_PROCESSES = 12; // How many processes the timeline's legend names.

  // ---- Building the DOM ----------------------------------------------------

  // An HTML element with attributes and children (strings become text nodes).
  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, value);
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === 'string' ? document.createTextNode(child) : child);
    }
    return node;
  }

  function svgEl(tag, attributes) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, value);
    return node;
  }

  function sectionBox(id, title, description) {
    const box = el('section', { id: id }, el('h2', {}, title));
    if (description) box.append(el('p', { class: 'description' }, description));
    return box;
  }

  // Appends the children that are not null (optional notes).
  function add(parent, ...children) {
    for (const child of children) if (child) parent.append(child);
  }

  // The smallest and largest of f(row) over rows (no spread: it would pass
  // tens of thousands of arguments).
  function extent(rows, f) {
    let low = Infinity, high = -Infinity;
    for (const row of rows) {
      const v = f(row);
      if (v < low) low = v;
      if (v > high) high = v;
    }
    return [low, high];
  }

  function emptyNote(text) {
    return el('p', { class: 'empty' }, text);
  }

  // ---- Formatting ----------------------------------------------------------

  // 3 significant digits, without trailing zeros: 1.5, 12.3, 250.
  function short(value) {
    return String(Number(value.toPrecision(3)));
  }

  function formatDuration(ns) {
    if (typeof ns !== 'number' || !isFinite(ns)) return '?';
    if (ns === 0) return '0';
    const a = Math.abs(ns);
    if (a < 1e3) return Math.round(ns) + ' ns';
    if (a < 1e6) return short(ns / 1e3) + ' µs';
    if (a < 1e9) return short(ns / 1e6) + ' ms';
    return short(ns / 1e9) + ' s';
  }

  function formatBytes(bytes) {
    if (typeof bytes !== 'number') return '?';
    if (bytes < 1024) return bytes + ' B';
    if (bytes < 1024 * 1024) return short(bytes / 1024) + ' KiB';
    if (bytes < 1024 * 1024 * 1024) return short(bytes / 1024 / 1024) + ' MiB';
    return short(bytes / 1024 / 1024 / 1024) + ' GiB';
  }

  function formatPercent(fraction) {
    return short(100 * fraction) + ' %';
  }

  function formatCell(value) {
    if (value === null || value === undefined) return '–';
    return String(value);
  }

  // A step of 1, 2 or 5 times a power of ten that cuts `span` into about
  // `count` pieces: the axes' tick spacing.
  function niceStep(span, count) {
    const raw = Math.max(span, 1) / count;
    const power = Math.pow(10, Math.floor(Math.log10(raw)));
    const m = raw / power;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * power;
  }

  // Tick labels: the unit suits the axis' end, the decimals suit the step.
  function formatTick(ns, step, end) {
    const a = Math.abs(end);
    const [divisor, unit] = a >= 1e9 ? [1e9, 's'] : a >= 1e6 ? [1e6, 'ms'] : a >= 1e3 ? [1e3, 'µs'] : [1, 'ns'];
    const digits = Math.max(0, Math.ceil(-Math.log10(step / divisor) - 1e-9));
    return (ns / divisor).toFixed(Math.min(digits, 9)) + ' ' + unit;
  }

  // ---- Colours -------------------------------------------------------------

  // A process's colour depends on its upid alone, so it is the same in every
  // picture of the page. Hues step by the golden angle so that neighbouring
  // upids (often the processes of one workload) look different.
  function processColour(upid) {
    if (typeof upid !== 'number') return 'hsl(0, 0%, 60%)';
    const hue = (upid * 137.508) % 360;
    const lightness = 40 + (upid % 3) * 9;
    return 'hsl(' + hue.toFixed(1) + ', 62%, ' + lightness + '%)';
  }

  // Slices are coloured by name: repeated work looks the same.
  function nameColour(name) {
    let hash = 0;
    for (let i = 0; i < name.length; i++) hash = (hash * 31 + name.charCodeAt(i)) | 0;
    const hue = ((hash >>> 0) % 360);
    return 'hsl(' + hue + ', 45%, 72%)';
  }

  // ---- The tooltip ---------------------------------------------------------

  const tooltip = document.getElementById('tooltip');

  function showTooltip(event, lines) {
    tooltip.textContent = lines.join('\n');
    tooltip.hidden = false;
    const x = Math.min(event.clientX + 14, window.innerWidth - tooltip.offsetWidth - 4);
    const y = event.clientY + 16 + tooltip.offsetHeight > window.innerHeight
      ? event.clientY - tooltip.offsetHeight - 8 : event.clientY + 16;
    tooltip.style.left = Math.max(0, x) + 'px';
    tooltip.style.top = Math.max(0, y) + 'px';
  }

  function hideTooltip() {
    tooltip.hidden = true;
  }

  // ---- The data --------------------------------------------------------------

  // Set by readData(), the page's first part: everything else draws from them.
  let data = { sections: {} };
  let trimmed = {};       // section name -> {kept, dropped}: rows report_html.cc left out.
  let overview = null;    // section('overview')
  let traceStart = 0;     // ns; the page's times count from here.
  let processSection = null;
  const processes = new Map(); // upid -> {pid, name, cpu_ns}

  // The section `name` with its columns looked up by name, or null when the
  // report does not have it. `required` columns must be there: a missing one
  // means the SQL files and this script disagree, an error worth showing.
  function section(name, required) {
    const raw = data.sections && data.sections[name];
    if (!raw) return null;
    const index = {};
    raw.columns.forEach((column, i) => { index[column] = i; });
    for (const column of required || []) {
      if (!(column in index)) throw new Error('section ' + name + ' has no column ' + column);
    }
    return {
      name: name,
      title: raw.title,
      description: raw.description,
      columns: raw.columns,
      rows: raw.rows,
      col: (column) => index[column],
      first: (column) => raw.rows.length && column in index ? raw.rows[0][index[column]] : undefined,
    };
  }

  // "The page left out ..." when report_html.cc dropped rows of `name` to stay
  // small enough; null otherwise.
  function trimNote(name, what) {
    const t = trimmed[name];
    if (!t) return null;
    return el('p', { class: 'note trimmed' },
      'This page left out the last ' + t.dropped + ' of ' + (t.kept + t.dropped) + ' ' + what +
      ' to stay under its size limit.');
  }

  function readData() {
    data = JSON.parse(document.getElementById('sluice-report-data').textContent);
    trimmed = JSON.parse(document.getElementById('sluice-report-trimmed').textContent);
    overview = section('overview');
    for (const [name, column] of [['overview', 'start_ts'], ['html_timeline_scale', 'start_ts'],
                                  ['html_window', 'start_ts']]) {
      const s = section(name);
      const value = s && s.first(column);
      if (typeof value === 'number') {
        traceStart = value;
        break;
      }
    }
    const machines = section('machines', ['id', 'machine']);
    if (machines) {
      const [i, n] = ['id', 'machine'].map(machines.col);
      for (const row of machines.rows) machineNames.set(row[i], row[n]);
    }
    processSection = section('html_processes', ['upid', 'pid', 'name', 'cpu_ns']);
    if (processSection) {
      const [u, p, n, c] = ['upid', 'pid', 'name', 'cpu_ns'].map(processSection.col);
      for (const row of processSection.rows) processes.set(row[u], { pid: row[p], name: row[n], cpu_ns: row[c] });
    }
  }

  // A relayed machine's CPUs are ucpus: machine * 4096 + the CPU's number
  // there (the machines section names the machines).
  const machineNames = new Map(); // machine id -> name
  function cpuMachine(cpu) {
    return Math.floor(cpu / 4096);
  }
  function cpuLabel(cpu) {
    const machine = cpuMachine(cpu);
    if (machine === 0) return 'CPU ' + cpu;
    return (machineNames.get(machine) || 'machine ' + machine) + ' CPU ' + (cpu % 4096);
  }
  // A heading lane before the first CPU of each relayed machine.
  function machineHeading(lanes, cpu, previousCpu) {
    const machine = cpuMachine(cpu);
    if (machine === 0 || (previousCpu !== null && cpuMachine(previousCpu) === machine)) return;
    lanes.append(el('div', { class: 'lane-machine' }, machineNames.get(machine) || 'machine ' + machine));
  }

  function processName(upid) {
    const p = processes.get(upid);
    if (!p) return 'upid ' + upid;
    return (p.name || '[unknown]') + (p.pid !== null && p.pid !== undefined ? ' (pid ' + p.pid + ')' : '');
  }

  function sinceStart(ts) {
    return '+' + formatDuration(ts - traceStart);
  }

  // The width of the pictures in CSS pixels: the page's width less the labels.
  function pictureWidth(container) {
    return Math.max(400, Math.floor(container.clientWidth - LABEL_WIDTH - 34));
  }

  // A time axis under a picture of `width` pixels showing [start, end]
  // (absolute ns); labels count from the trace's start.
  function timeAxis(start, end, width) {
    const svg = svgEl('svg', { class: 'axis', width: width, height: 20 });
    const span = Math.max(end - start, 1);
    const step = niceStep(span, Math.max(2, Math.floor(width / 110)));
    const from = start - traceStart;
    for (let t = Math.ceil(from / step) * step; t <= from + span + 1e-6; t += step) {
      const x = (t - from) / span * width;
      svg.append(svgEl('line', { x1: x, x2: x, y1: 0, y2: 4 }));
      const label = svgEl('text', { x: Math.min(Math.max(x, 2), width - 2), y: 16,
        'text-anchor': x < 20 ? 'start' : x > width - 30 ? 'end' : 'middle' });
      label.textContent = formatTick(t, step, from + span);
      svg.append(label);
    }
    return svg;
  }

  function lane(label, picture, title) {
    const labelNode = el('div', { class: 'lane-label', title: title || label }, label);
    return el('div', { class: 'lane' }, labelNode, picture);
  }

  // ---- The parts of the page ----------------------------------------------

  function drawHeader(main) {
    const header = el('header', { id: 'overview' }, el('h1', {}, 'sluice report'),
      el('p', { class: 'trace-path' }, String(data.trace)));
    document.title = 'sluice report: ' + String(data.trace).split('/').pop();
    if (!overview || !overview.rows.length) {
      header.append(emptyNote('No overview: the report has no overview section.'));
      main.append(header);
      return;
    }
    const get = overview.first;
    const figures = el('dl', { class: 'figures' });
    const figure = (name, value) => figures.append(el('div', { class: 'figure' }, el('dt', {}, name), el('dd', {}, value)));
    figure('span', formatDuration(typeof get('duration_s') === 'number' ? get('duration_s') * 1e9 : undefined));
    figure('size', formatBytes(get('size_bytes')));
    figure('CPUs', formatCell(get('cpus')));
    figure('processes', formatCell(get('processes')));
    figure('threads', formatCell(get('threads')));
    figure('CPU runs', formatCell(get('sched_slices')));
    figure('slices', formatCell(get('slices')));
    figure('counter values', formatCell(get('counter_values')));
    header.append(figures);
    const system = [get('kernel'), get('machine')].filter((v) => typeof v === 'string' && v).join(' ');
    if (system) header.append(el('p', { class: 'description' }, 'Recorded on Linux ' + system + '.'));
    const names = Object.keys(trimmed);
    if (names.length) {
      header.append(el('p', { class: 'note' }, 'To stay under its size limit this page left out rows of: ' +
        names.map((n) => n + ' (' + trimmed[n].dropped + ')').join(', ') +
        '. `sluice report --format json` has them all.'));
    }
    main.append(header);
  }

  function drawLosses(main) {
    const losses = section('losses');
    const box = sectionBox('losses', losses ? losses.title : 'Losses and errors', losses && losses.description);
    main.append(box);
    if (!losses) {
      box.append(emptyNote('The report has no losses section.'));
      return;
    }
    if (!losses.rows.length) {
      box.append(el('p', { class: 'ok' }, 'Nothing lost: no data_loss or error stat is above zero.'));
      return;
    }
    const severity = losses.col('severity');
    const anyLoss = losses.rows.some((row) => row[severity] === 'data_loss');
    box.classList.add(anyLoss ? 'alert' : 'warn');
    box.querySelector('h2').textContent = anyLoss ? 'Data was lost' : 'Errors (nothing lost)';
    box.append(dataTable(losses, 'loss-table', 'loss-row'));
    add(box, trimNote('losses', 'rows'));
  }

  function drawTimeline(main) {
    const cells = section('html_timeline', ['cpu', 'bucket', 'top_upid', 'top_run_ns', 'run_ns']);
    const scale = section('html_timeline_scale', ['start_ts', 'bucket_ns', 'buckets']);
    const box = sectionBox('timeline', cells ? cells.title : 'What ran on each CPU', cells && cells.description);
    main.append(box);
    if (!cells || !scale || !scale.rows.length) {
      box.append(emptyNote('The report has no CPU timeline.'));
      return;
    }
    if (!cells.rows.length) {
      box.append(emptyNote('No CPU ran anything in this trace (no sched_switch events).'));
      return;
    }
    const start = scale.first('start_ts');
    const bucketNs = Math.max(1, scale.first('bucket_ns'));
    const buckets = Math.max(1, scale.first('buckets'));

    // Per CPU, its cells by bucket (a Map: the cells are sparse where the
    // CPU was idle). Every CPU the trace has gets a row, idle or not.
    const cpuIds = new Set();
    const declared = scale.first('cpus');
    if (typeof declared === 'number') for (let c = 0; c < declared && c < 4096; c++) cpuIds.add(c);
    const [cpuCol, bucketCol, upidCol, topCol, runCol] =
      ['cpu', 'bucket', 'top_upid', 'top_run_ns', 'run_ns'].map(cells.col);
    for (const row of cells.rows) cpuIds.add(row[cpuCol]);
    const perCpu = new Map();
    for (const cpu of [...cpuIds].sort((a, b) => a - b)) perCpu.set(cpu, new Map());
    for (const row of cells.rows) {
      const b = row[bucketCol];
      if (b >= 0 && b < buckets) perCpu.get(row[cpuCol]).set(b, row);
    }

    const lanes = el('div', { class: 'lanes', id: 'timeline-rows' });
    box.append(lanes);
    const width = pictureWidth(box);
    const rowHeight = perCpu.size > 64 ? 6 : perCpu.size > 16 ? 10 : 18;
    const cellWidth = width / buckets;
    const ratio = window.devicePixelRatio || 1;
    let previousCpu = null;
    for (const [cpu, byBucket] of perCpu) {
      machineHeading(lanes, cpu, previousCpu);
      previousCpu = cpu;
      const canvas = el('canvas', { class: 'timeline-cpu', id: 'timeline-cpu-' + cpu,
                                    'data-cpu': String(cpu) });
      canvas.width = Math.round(width * ratio);
      canvas.height = Math.round(rowHeight * ratio);
      canvas.style.width = width + 'px';
      canvas.style.height = rowHeight + 'px';
      const context = canvas.getContext('2d');
      context.scale(ratio, ratio);
      for (const [b, row] of byBucket) {
        if (!(row[runCol] > 0)) continue;
        const busy = Math.min(1, row[runCol] / bucketNs);
        const height = Math.max(1, busy * rowHeight);
        context.fillStyle = processColour(row[upidCol]);
        context.fillRect(b * cellWidth, rowHeight - height, Math.max(cellWidth, 1), height);
      }
      canvas.addEventListener('mousemove', (event) => {
        const b = Math.floor(event.offsetX / cellWidth);
        if (b < 0 || b >= buckets) return hideTooltip();
        const from = start + b * bucketNs;
        const row = byBucket.get(b);
        const lines = [cpuLabel(cpu), sinceStart(from) + ' to ' + sinceStart(from + bucketNs),
                       'busy ' + formatPercent(row ? row[runCol] / bucketNs : 0)];
        if (row) lines.push('longest: ' + processName(row[upidCol]) + ', ' + formatDuration(row[topCol]));
        showTooltip(event, lines);
      });
      canvas.addEventListener('mouseleave', hideTooltip);
      lanes.append(lane(cpuLabel(cpu), canvas));
    }
    box.append(timeAxis(start, start + bucketNs * buckets, width));

    // The legend: the processes that ran longest over the whole trace.
    if (processSection && processSection.rows.length) {
      const legend = el('div', { class: 'legend', id: 'timeline-legend' });
      for (const row of processSection.rows.slice(0, TOP_PROCESSES)) {
        const upid = row[processSection.col('upid')];
        const swatch = el('span', { class: 'swatch' });
        swatch.style.background = processColour(upid);
        legend.append(el('span', { class: 'legend-item' }, swatch,
          processName(upid) + ' ' + formatDuration(row[processSection.col('cpu_ns')])));
      }
      box.append(legend);
    }
    box.append(el('p', { class: 'description' },
      'Each span is ' + formatDuration(bucketNs) + '. Height: how busy the CPU was in it; colour: the process ' +
      'that ran longest there. Hover for details.'));
    add(box, trimNote('html_timeline', 'timeline cells'));
  }

  function drawLatencyHistogram(main) {
    const histogram = section('html_latency_histogram', ['bucket', 'lower_ns', 'waits']);
    const box = sectionBox('latency', histogram ? histogram.title : 'Scheduling latency histogram',
                           histogram && histogram.description);
    main.append(box);
    if (!histogram) {
      box.append(emptyNote('The report has no scheduling latency histogram.'));
      return;
    }
    if (!histogram.rows.length) {
      box.append(emptyNote('No thread waited to run in this trace (no runnable thread states: ' +
                           'sched_waking or sched_switch events are missing).'));
      return;
    }
    const [bucketCol, lowerCol, waitsCol] = ['bucket', 'lower_ns', 'waits'].map(histogram.col);
    const [first, last] = extent(histogram.rows, (row) => row[bucketCol]);
    const most = Math.max(1, extent(histogram.rows, (row) => row[waitsCol])[1]);
    const total = histogram.rows.reduce((sum, row) => sum + row[waitsCol], 0);
    const width = Math.min(pictureWidth(box) + LABEL_WIDTH, Math.max(360, (last - first + 1) * 56));
    const chartHeight = 150;
    const slot = width / (last - first + 1);
    const svg = svgEl('svg', { id: 'latency-histogram', width: width, height: chartHeight + 34 });
    for (const row of histogram.rows) {
      const x = (row[bucketCol] - first) * slot;
      const height = Math.max(1, row[waitsCol] / most * chartHeight);
      const bar = svgEl('rect', { class: 'hist-bar', x: x + 2, y: 14 + chartHeight - height,
                                  width: Math.max(1, slot - 4), height: height });
      const lower = row[lowerCol];
      bar.addEventListener('mousemove', (event) => showTooltip(event, [
        formatDuration(lower) + ' to ' + formatDuration(2 * lower),
        row[waitsCol] + ' waits (' + formatPercent(row[waitsCol] / total) + ')']));
      bar.addEventListener('mouseleave', hideTooltip);
      svg.append(bar);
      const count = svgEl('text', { class: 'hist-count', x: x + slot / 2, y: 10 + chartHeight - height,
                                    'text-anchor': 'middle' });
      count.textContent = String(row[waitsCol]);
      svg.append(count);
    }
    // Bucket labels: every bucket when there is room, else every other one.
    const every = slot >= 44 ? 1 : slot >= 22 ? 2 : 4;
    for (let b = first; b <= last; b += every) {
      const label = svgEl('text', { class: 'hist-label', x: (b - first) * slot + slot / 2,
                                    y: chartHeight + 30, 'text-anchor': 'middle' });
      label.textContent = formatDuration(Math.pow(2, b));
      svg.append(label);
    }
    box.append(svg);
    box.append(el('p', { class: 'description' },
      total + ' waits. Each bar holds the waits from its label to twice that.'));
    add(box, trimNote('html_latency_histogram', 'buckets'));
  }

  // The window's bounds and counts, and the line that says how to choose
  // another window.
  function windowInfo() {
    const w = section('html_window', ['start_ts', 'end_ts', 'slices', 'runs']);
    if (!w || !w.rows.length) return null;
    return { start: w.first('start_ts'), end: w.first('end_ts'),
             slices: w.first('slices'), runs: w.first('runs') };
  }

  // Whether the window is the whole trace (the default), as far as the
  // report tells.
  function isWholeTrace(info) {
    if (!info || !overview || !overview.rows.length) return true;
    return info.start <= overview.first('start_ts') && info.end >= overview.first('end_ts');
  }

  function windowHelp(info, shown, total, what) {
    const parts = [];
    if (info) {
      parts.push(el('p', {}, 'Window: ' + sinceStart(info.start) + ' to ' + sinceStart(info.end) +
                 ' (' + formatDuration(info.end - info.start) + ').'));
    }
    if (typeof total === 'number' && shown < total) {
      parts.push(el('p', { class: 'note capped' }, 'Showing ' + shown + ' of ' + total + ' ' + what +
                 ' in the window (the first ones by start time).'));
    }
    parts.push(el('p', { class: 'description' }, 'Another window: ',
      el('code', {}, 'sluice report ' + String(data.trace) + ' --html FILE --window START,END'),
      ' (seconds from the trace\'s start).'));
    return parts;
  }

  // The start of a part that shows the window (slices, runs): its box, where
  // the window is, how many items it shows and how to choose another window.
  // Returns the section and the box, or null when there is nothing to draw
  // (the box then says why).
  function windowPart(main, info, part) {
    const s = section(part.name, part.columns);
    const box = sectionBox(part.id, s ? s.title : part.title, s && s.description);
    main.append(box);
    if (!s) {
      box.append(emptyNote('The report has no ' + part.what + ' section.'));
      return null;
    }
    box.append(...windowHelp(info, s.rows.length, info && info[part.countColumn], part.what));
    add(box, trimNote(part.name, part.what));
    if (!s.rows.length) {
      box.append(emptyNote(isWholeTrace(info) ? part.noneInTrace : part.noneInWindow));
      return null;
    }
    return [s, box];
  }

  // One tooltip for all the items of an SVG picture: the item under the
  // pointer has data-i, its row's index, and `describe` gives its lines.
  function hoverItems(svg, describe) {
    svg.addEventListener('mousemove', (event) => {
      const i = event.target.getAttribute && event.target.getAttribute('data-i');
      if (i === null || i === undefined) return hideTooltip();
      showTooltip(event, describe(Number(i)));
    });
    svg.addEventListener('mouseleave', hideTooltip);
  }

  function drawWindowSlices(main, info) {
    const part = windowPart(main, info, {
      name: 'html_window_slices', id: 'slices', title: 'Slices in the window', what: 'slices',
      columns: ['ts', 'dur', 'depth', 'name', 'track_id', 'id', 'kind', 'owner', 'track'],
      countColumn: 'slices', noneInTrace: 'No slices in this trace.', noneInWindow: 'No slices in this window.',
    });
    if (!part) return;
    const [slices, box] = part;
    const [tsCol, durCol, depthCol, nameCol, trackCol, idCol, kindCol, ownerCol, trackNameCol] =
      ['ts', 'dur', 'depth', 'name', 'track_id', 'id', 'kind', 'owner', 'track'].map(slices.col);

    // Lanes, one per track: thread tracks first, then process and global
    // ones, each by id.
    const byTrack = new Map();
    for (let i = 0; i < slices.rows.length; i++) {
      const row = slices.rows[i];
      let track = byTrack.get(row[trackCol]);
      if (!track) {
        track = { row: row, indices: [], depth: 0 };
        byTrack.set(row[trackCol], track);
      }
      track.indices.push(i);
      track.depth = Math.max(track.depth, row[depthCol] || 0);
    }
    const kindOrder = { thread: 0, process: 1, global: 2 };
    const tracks = [...byTrack.values()].sort((a, b) =>
      (kindOrder[a.row[kindCol]] ?? 3) - (kindOrder[b.row[kindCol]] ?? 3) ||
      (a.row[idCol] ?? 0) - (b.row[idCol] ?? 0) || a.row[trackCol] - b.row[trackCol]);

    const start = info ? info.start : extent(slices.rows, (row) => row[tsCol])[0];
    const end = info ? info.end : extent(slices.rows, (row) => row[tsCol] + Math.max(row[durCol], 0))[1];
    const span = Math.max(end - start, 1);
    const width = pictureWidth(box);
    const rowHeight = 14;
    const lanes = el('div', { class: 'lanes', id: 'slice-lanes' });

    function describe(row) {
      const lines = [String(row[nameCol] ?? '')];
      lines.push(row[durCol] < 0 ? 'still open at the end of the trace' : 'duration ' + formatDuration(row[durCol]));
      lines.push('start ' + sinceStart(row[tsCol]) + ', depth ' + row[depthCol]);
      lines.push(trackLabel(row));
      return lines;
    }

    function trackLabel(row) {
      const owner = row[ownerCol] ? String(row[ownerCol]) : '';
      const name = row[trackNameCol] ? String(row[trackNameCol]) : '';
      if (row[kindCol] === 'thread') return owner + ' (tid ' + row[idCol] + ')' + (name ? ' ' + name : '');
      if (row[kindCol] === 'process') return owner + ' (pid ' + row[idCol] + ')' + (name ? ' ' + name : '');
      return name || 'track ' + row[trackCol];
    }

    for (const track of tracks) {
      const height = (track.depth + 1) * rowHeight;
      const svg = svgEl('svg', { class: 'lane-svg', width: width, height: height });
      const items = document.createDocumentFragment();
      for (const i of track.indices) {
        const row = slices.rows[i];
        const open = row[durCol] < 0;
        const from = Math.max(row[tsCol], start);
        const to = open ? end : Math.min(row[tsCol] + row[durCol], end);
        const x = (from - start) / span * width;
        const w = Math.max(1, (to - from) / span * width);
        const y = (row[depthCol] || 0) * rowHeight;
        const name = String(row[nameCol] ?? '');
        items.append(svgEl('rect', { class: open ? 'slice open' : 'slice', x: x, y: y + 1, width: w,
                                     height: rowHeight - 2, fill: nameColour(name), 'data-i': i }));
        // Names where the slice is wide enough to hold a few characters.
        if (w >= 30) {
          const fits = Math.floor((w - 4) / 6);
          const text = svgEl('text', { class: 'slice-name', x: x + 2, y: y + rowHeight - 3 });
          text.textContent = name.length <= fits ? name : name.slice(0, Math.max(1, fits - 1)) + '…';
          items.append(text);
        }
      }
      svg.append(items);
      hoverItems(svg, (i) => describe(slices.rows[i]));
      lanes.append(lane(trackLabel(track.row), svg));
    }
    box.append(lanes);
    box.append(timeAxis(start, start + span, width));
  }

  function drawWindowRuns(main, info) {
    const part = windowPart(main, info, {
      name: 'html_window_runs', id: 'runs', title: 'CPU runs in the window', what: 'CPU runs',
      columns: ['cpu', 'ts', 'dur', 'tid', 'thread', 'upid'], countColumn: 'runs',
      noneInTrace: 'No CPU ran anything in this trace (no sched_switch events).',
      noneInWindow: 'No CPU ran anything in this window.',
    });
    if (!part) return;
    const [runs, box] = part;
    const [cpuCol, tsCol, durCol, tidCol, threadCol, upidCol] =
      ['cpu', 'ts', 'dur', 'tid', 'thread', 'upid'].map(runs.col);
    const start = info ? info.start : extent(runs.rows, (row) => row[tsCol])[0];
    const end = info ? info.end : extent(runs.rows, (row) => row[tsCol] + row[durCol])[1];
    const span = Math.max(end - start, 1);
    const width = pictureWidth(box);
    const height = 16;
    const perCpu = new Map();
    runs.rows.forEach((row, i) => {
      if (!perCpu.has(row[cpuCol])) perCpu.set(row[cpuCol], []);
      perCpu.get(row[cpuCol]).push(i);
    });
    const lanes = el('div', { class: 'lanes', id: 'run-lanes' });
    let previousCpu = null;
    for (const cpu of [...perCpu.keys()].sort((a, b) => a - b)) {
      machineHeading(lanes, cpu, previousCpu);
      previousCpu = cpu;
      const svg = svgEl('svg', { class: 'lane-svg', width: width, height: height, 'data-cpu': cpu });
      const items = document.createDocumentFragment();
      for (const i of perCpu.get(cpu)) {
        const row = runs.rows[i];
        const from = Math.max(row[tsCol], start);
        const to = Math.min(row[tsCol] + row[durCol], end);
        items.append(svgEl('rect', { class: 'run', x: (from - start) / span * width, y: 1,
                                     width: Math.max(1, (to - from) / span * width), height: height - 2,
                                     fill: processColour(row[upidCol]), 'data-i': i }));
      }
      svg.append(items);
      hoverItems(svg, (i) => {
        const row = runs.rows[i];
        return [String(row[threadCol]) + ' (tid ' + row[tidCol] + ')', processName(row[upidCol]),
                cpuLabel(row[cpuCol]) + ', start ' + sinceStart(row[tsCol]), 'ran ' + formatDuration(row[durCol])];
      });
      lanes.append(lane(cpuLabel(cpu), svg));
    }
    box.append(lanes);
    box.append(timeAxis(start, start + span, width));
  }

  // What an empty table means, per section; others say "No rows."
  const EMPTY_TABLE = {
    overview: 'No overview.',
    cpu_by_process: 'No CPU time in this trace (no sched_switch events).',
    cpu_by_thread: 'No CPU time in this trace (no sched_switch events).',
    cpu_utilization: 'No CPU time in this trace (no sched_switch events).',
    sched_latency: 'No thread waited to run in this trace (no sched_waking events).',
    longest_slices: 'No slices in this trace.',
    slice_names: 'No slices in this trace.',
    counters: 'No counters in this trace.',
  };

  function dataTable(s, id, rowClass) {
    const head = el('tr', {}, ...s.columns.map((column) => el('th', {}, String(column))));
    const body = el('tbody');
    for (const row of s.rows) {
      const tr = el('tr', rowClass ? { class: rowClass } : {});
      for (const value of row) {
        const kind = value === null ? 'null' : typeof value === 'number' ? 'num' : 'text';
        tr.append(el('td', { class: kind }, formatCell(value)));
      }
      body.append(tr);
    }
    return el('div', { class: 'table-wrap' }, el('table', { id: id }, el('thead', {}, head), body));
  }

  // Every section that is not a picture's data, in the report's order (the
  // losses are at the top of the page already).
  function drawTables(main) {
    const names = Object.keys(data.sections || {}).filter((n) => !n.startsWith('html_') && n !== 'losses');
    for (const name of names) {
      const s = section(name);
      const box = sectionBox('table-' + name, s.title || name, s.description);
      box.append(s.rows.length ? dataTable(s, 'rows-' + name, null) : emptyNote(EMPTY_TABLE[name] || 'No rows.'));
      add(box, trimNote(name, 'rows'));
      main.append(box);
    }
    if (!names.length) main.append(emptyNote('The report has no tables.'));
  }

  // ---- Drawing -------------------------------------------------------------

  const main = document.getElementById('report');
  const errors = document.getElementById('script-errors');
  let failed = 0;
  function part(name, draw) {
    try {
      draw();
    } catch (error) {
      failed++;
      errors.textContent += name + ': ' + (error && error.stack ? error.stack : String(error)) + '\n';
    }
  }
  let info = null;
  part('data', readData);
  if (failed) {
    document.body.dataset.rendered = 'errors';
    return;
  }
  part('overview', () => drawHeader(main));
  part('losses', () => drawLosses(main));
  part('timeline', () => drawTimeline(main));
  part('latency histogram', () => drawLatencyHistogram(main));
  part('window', () => { info = windowInfo(); });
  part('slices', () => drawWindowSlices(main, info));
  part('runs', () => drawWindowRuns(main, info));
  part('tables', () => drawTables(main));
  document.body.dataset.rendered = failed ? 'errors' : 'ok';
})();
