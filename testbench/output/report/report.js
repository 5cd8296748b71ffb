// SPDX-License-Identifier: Apache-2.0
// report.html's charts: reads the run's data (the JSON in #rnicsim-data, shaped by
// testbench/output/html_report.cpp) and draws each chart with Chart.js (Debian's libjs-chart.js,
// inlined in the file). Every chart's box gets data-rendered="<points>" once drawn (the browser
// test reads it); the body gets data-ready="1" at the end. Drag across a chart to zoom into a
// time range, double-click to zoom out; hover for values; click a legend entry to hide a line.
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('rnicsim-data').textContent);
  const palette = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2',
                   '#7f7f7f', '#bcbd22', '#17becf'];

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) {
      e.setAttribute(k, attrs[k]);
    }
    if (text !== undefined) {
      e.textContent = text;
    }
    return e;
  }

  function fmt(v) {
    if (typeof v !== 'number') {
      return String(v);
    }
    const a = Math.abs(v);
    if (a >= 1e9) {
      return (Math.round(v / 1e7) / 100) + 'G';
    }
    if (a >= 1e6) {
      return (Math.round(v / 1e4) / 100) + 'M';
    }
    if (a >= 1e4) {
      return (Math.round(v / 10) / 100) + 'k';
    }
    if (v !== 0 && a < 1e-3) {
      return v.toExponential(2);
    }
    return String(Math.round(v * 1000) / 1000);
  }

  function axis(a, extra) {
    const o = Object.assign({
      type: a.log ? 'logarithmic' : 'linear',
      title: {display: true, text: a.label},
      ticks: {maxTicksLimit: 8, callback: (v) => fmt(v)}
    }, extra || {});
    if (a.min !== undefined) {
      o.min = a.min;
    }
    if (a.max !== undefined) {
      o.max = a.max;
    }
    return o;
  }

  // Drag to zoom the x axis, double-click to reset.
  function zoomable(chart, canvas) {
    let from = null;
    const band = el('div', {class: 'band'});
    canvas.parentNode.appendChild(band);
    canvas.addEventListener('mousedown', (ev) => {
      from = ev.offsetX;
      band.style.left = ev.offsetX + 'px';
      band.style.width = '0px';
      band.style.display = 'block';
    });
    canvas.addEventListener('mousemove', (ev) => {
      if (from !== null) {
        band.style.left = Math.min(from, ev.offsetX) + 'px';
        band.style.width = Math.abs(ev.offsetX - from) + 'px';
      }
    });
    canvas.addEventListener('mouseup', (ev) => {
      band.style.display = 'none';
      if (from !== null && Math.abs(ev.offsetX - from) > 5) {
        const a = chart.scales.x.getValueForPixel(Math.min(from, ev.offsetX));
        const b = chart.scales.x.getValueForPixel(Math.max(from, ev.offsetX));
        chart.options.scales.x.min = a;
        chart.options.scales.x.max = b;
        chart.update('none');
      }
      from = null;
    });
    canvas.addEventListener('dblclick', () => {
      chart.options.scales.x.min = chart.$initialMin;
      chart.options.scales.x.max = chart.$initialMax;
      chart.update('none');
    });
  }

  function lineChart(box, spec) {
    const canvas = el('canvas');
    box.appendChild(canvas);
    let points = 0;
    const datasets = spec.series.map((s, i) => {
      points += s.points.length;
      // An aggregate (sum, max, mean over many) is dark and dashed, drawn over the rest.
      const color = s.aggregate ? '#222222' : palette[(i - (spec.series[0].aggregate ? 1 : 0)) %
                                                      palette.length];
      return {
        label: s.name,
        data: s.points.map((p) => ({x: p[0], y: p[1]})),
        borderColor: color,
        backgroundColor: spec.type === 'scatter' ? color + '99' : color,
        borderWidth: s.width || 1.5,
        borderDash: s.aggregate ? [5, 3] : [],
        order: s.aggregate ? 0 : 1,
        pointRadius: spec.type === 'scatter' ? (s.line ? 3 : 2) : 0,
        pointHoverRadius: 4,
        stepped: s.step ? 'before' : false,
        showLine: spec.type !== 'scatter' || s.line === true,
        fill: false
      };
    });
    const chart = new Chart(canvas.getContext('2d'), {
      type: spec.type === 'scatter' ? 'scatter' : 'line',
      data: {datasets: datasets},
      options: {
        animation: false,
        parsing: false,
        normalized: true,
        maintainAspectRatio: false,
        interaction: {mode: spec.type === 'scatter' ? 'nearest' : 'index', intersect: false},
        plugins: {
          legend: {display: spec.series.length > 1, position: 'bottom',
                   labels: {boxWidth: 12, font: {size: 11}}},
          tooltip: {callbacks: {label: (c) => c.dataset.label + ': ' + fmt(c.parsed.y) +
                                               (spec.type === 'scatter' ? ' at ' + fmt(c.parsed.x) : '')}}
        },
        scales: {x: axis(spec.x), y: axis(spec.y)}
      }
    });
    chart.$initialMin = spec.x.min;
    chart.$initialMax = spec.x.max;
    zoomable(chart, canvas);
    return points;
  }

  // Horizontal floating bars: each stage from where the previous one ended (avg), and its p99.
  function waterfall(box, spec) {
    const canvas = el('canvas');
    box.appendChild(canvas);
    const chart = new Chart(canvas.getContext('2d'), {
      type: 'bar',
      data: {
        labels: spec.labels,
        datasets: spec.series.map((s, i) => ({
          label: s.name,
          data: s.bars,
          backgroundColor: palette[i % palette.length] + (i === 0 ? 'cc' : '55'),
          borderColor: palette[i % palette.length],
          borderWidth: 1,
          grouped: false,
          barPercentage: i === 0 ? 0.8 : 0.35
        }))
      },
      options: {
        animation: false,
        indexAxis: 'y',
        maintainAspectRatio: false,
        plugins: {
          legend: {position: 'bottom', labels: {boxWidth: 12, font: {size: 11}}},
          tooltip: {callbacks: {label: (c) => {
            const b = c.raw;
            return c.dataset.label + ': ' + fmt(b[1] - b[0]) + ' ns (from ' + fmt(b[0]) + ' ns)';
          }}}
        },
        scales: {x: axis(spec.x, {beginAtZero: true}), y: {ticks: {font: {size: 11}}}}
      }
    });
    void chart;
    return spec.series.reduce((n, s) => n + s.bars.length, 0);
  }

  // Rows (link directions) by columns (samples): paused samples dark.
  function heatmap(box, spec) {
    const rows = spec.rows.length;
    const label = 110;
    const height = Math.max(60, rows * 12 + 30);
    box.style.height = (height + 30) + 'px';
    const canvas = el('canvas', {width: Math.max(300, box.clientWidth), height: height});
    canvas.style.height = height + 'px';
    canvas.style.width = canvas.width + 'px';
    box.appendChild(canvas);
    const tip = el('div', {class: 'tip'});
    box.appendChild(tip);
    const g = canvas.getContext('2d');
    const w = canvas.width - label - 10;
    const cols = spec.times.length;
    const cw = w / Math.max(1, cols);
    g.font = '11px sans-serif';
    g.fillStyle = '#333';
    let cells = 0;
    spec.rows.forEach((r, i) => {
      g.fillStyle = '#333';
      g.fillText(r.name, 4, i * 12 + 10);
      g.fillStyle = '#eef';
      g.fillRect(label, i * 12 + 1, w, 10);
      g.fillStyle = '#d62728';
      r.cells.forEach((v, c) => {
        if (v > 0) {
          g.globalAlpha = Math.min(1, 0.25 + v);
          g.fillRect(label + c * cw, i * 12 + 1, Math.max(1, cw), 10);
          g.globalAlpha = 1;
        }
        cells += 1;
      });
    });
    g.fillStyle = '#333';
    g.fillText(fmt(spec.times[0]) + ' ' + spec.x.label, label, rows * 12 + 22);
    const last = fmt(spec.times[cols - 1]) + ' ' + spec.x.label;
    g.fillText(last, canvas.width - 10 - g.measureText(last).width, rows * 12 + 22);
    canvas.addEventListener('mousemove', (ev) => {
      const sx = canvas.width / canvas.clientWidth;
      const x = ev.offsetX * sx;
      const row = Math.floor(ev.offsetY * sx / 12);
      const col = Math.floor((x - label) / cw);
      if (row >= 0 && row < rows && col >= 0 && col < cols) {
        tip.textContent = spec.rows[row].name + ' at ' + fmt(spec.times[col]) + ' ' +
                          spec.x.label + ': ' + (spec.rows[row].cells[col] > 0 ? 'paused' : 'sending');
      }
    });
    return cells;
  }

  function table(parent, t) {
    const tab = el('table');
    const head = el('tr');
    t.columns.forEach((c) => head.appendChild(el('th', {}, c)));
    tab.appendChild(head);
    t.rows.forEach((r) => {
      const tr = el('tr');
      r.forEach((v) => tr.appendChild(el('td', {}, fmt(v))));
      tab.appendChild(tr);
    });
    parent.appendChild(tab);
  }

  const main = document.getElementById('charts');
  for (const spec of data.charts) {
    const sec = el('section', {id: spec.id});
    sec.appendChild(el('h2', {}, spec.title));
    sec.appendChild(el('p', {class: 'answers'}, spec.answers));
    const box = el('div', {class: 'chart', 'data-chart': spec.id});
    if (spec.tall) {
      box.style.height = spec.tall + 'px';
    }
    sec.appendChild(box);
    if (spec.note) {
      sec.appendChild(el('p', {class: 'note'}, spec.note));
    }
    main.appendChild(sec);
    let n = 0;
    if (spec.type === 'waterfall') {
      n = waterfall(box, spec);
    } else if (spec.type === 'heatmap') {
      n = heatmap(box, spec);
    } else {
      n = lineChart(box, spec);
    }
    box.setAttribute('data-rendered', String(n));
  }
  const tables = document.getElementById('tables');
  for (const t of data.tables) {
    const sec = el('section');
    sec.appendChild(el('h2', {}, t.title));
    if (t.answers) {
      sec.appendChild(el('p', {class: 'answers'}, t.answers));
    }
    if (t.rows.length === 0) {
      sec.appendChild(el('p', {class: 'note'}, t.empty || 'none'));
    } else {
      table(sec, t);
    }
    tables.appendChild(sec);
  }
  document.body.setAttribute('data-ready', '1');
})();
