/**
 * The dashboard's stylesheet and script, served by the dashboard itself (no CDN, no build
 * step). Pages work without the script; it adds copy buttons, checks allowed origins
 * while they are typed, and runs the origin tester in place.
 */
export const DASHBOARD_CSS = `
:root {
  --fg: #1c2430; --muted: #5b6574; --line: #d9dee5; --bg: #f6f7f9; --panel: #fff;
  --accent: #2453c7; --accent-dark: #1a3f9c; --danger: #b42318; --ok: #146c2e; --warn: #8a5a00;
  --focus: #f5b400;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  color: var(--fg); background: var(--bg); line-height: 1.5;
}
* { box-sizing: border-box; }
body { margin: 0; font-size: 15px; }
a { color: var(--accent); }
a:hover { color: var(--accent-dark); }
code, textarea, input[readonly] { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.9em; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.skip-link { position: absolute; left: -9999px; top: 0; background: #fff; padding: 0.5rem 1rem; z-index: 10; }
.skip-link:focus { left: 0.5rem; }
.visually-hidden { position: absolute !important; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }

.topbar { display: flex; align-items: center; justify-content: space-between; gap: 1rem;
  background: #111827; color: #e5e7eb; padding: 0.6rem 1.5rem; }
.brand { color: #fff; font-weight: 700; text-decoration: none; font-size: 1.1rem; letter-spacing: 0.02em; }
.brand:hover { color: #fff; }
.account { display: flex; align-items: center; gap: 1rem; flex-wrap: wrap; }
.account form { margin: 0; }
.business { font-weight: 600; color: #fff; }
.who { color: #b8c0cc; font-size: 0.9rem; }

.shell { display: grid; grid-template-columns: 11rem minmax(0, 1fr); gap: 1.75rem; max-width: 84rem; margin: 0 auto; padding: 1.5rem; }
.shell.single { grid-template-columns: minmax(0, 1fr); max-width: 32rem; padding-top: 3rem; }
.sidenav { font-size: 0.95rem; }
.sidenav ul { list-style: none; margin: 0; padding: 0; }
.nav-heading { font-weight: 700; margin: 0 0 0.5rem; }
.nav-group { text-transform: uppercase; font-size: 0.75rem; letter-spacing: 0.06em; color: var(--muted); margin: 0 0 0.25rem; }
.sidenav a { display: block; padding: 0.35rem 0.6rem; border-radius: 6px; text-decoration: none; color: var(--fg); }
.sidenav a[aria-current] { background: #e4eaf8; color: var(--accent-dark); font-weight: 600; }
main { min-width: 0; }
main:focus { outline: none; }

.breadcrumb ol { list-style: none; display: flex; flex-wrap: wrap; gap: 0.4rem; padding: 0; margin: 0 0 1rem; font-size: 0.9rem; color: var(--muted); }
.breadcrumb li + li::before { content: "›"; margin-right: 0.4rem; color: var(--muted); }
h1 { font-size: 1.6rem; margin: 0 0 0.5rem; line-height: 1.25; }
h2 { font-size: 1.15rem; margin: 0 0 0.75rem; }
.lead { color: var(--muted); margin: 0 0 1.25rem; max-width: 48rem; }
.page-head { display: flex; align-items: center; justify-content: space-between; gap: 1rem; flex-wrap: wrap; margin-bottom: 0.5rem; }
.page-head h1 { display: flex; align-items: center; gap: 0.5rem; flex-wrap: wrap; }
.muted { color: var(--muted); }
.small { font-size: 0.85rem; }
.hint { color: var(--muted); font-size: 0.9rem; margin: 0 0 0.4rem; }
.hint-inline, .optional { color: var(--muted); font-weight: 400; font-size: 0.9rem; }
.narrow { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 2rem; }

.button { display: inline-block; font: inherit; font-weight: 600; padding: 0.5rem 1rem; border-radius: 6px;
  border: 1px solid #b7bfcb; background: #fff; color: var(--fg); text-decoration: none; cursor: pointer; line-height: 1.3; }
.button:hover { background: #f0f2f5; color: var(--fg); }
.button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
.button.primary:hover { background: var(--accent-dark); }
.button.danger { background: var(--danger); border-color: var(--danger); color: #fff; }
.button.danger:hover { background: #8f1c13; }
.button.small { padding: 0.25rem 0.7rem; font-size: 0.85rem; }
.topbar .button.small { background: transparent; color: #e5e7eb; border-color: #4b5563; }
.inline-fields { display: flex; gap: 0.5rem; align-items: center; flex-wrap: wrap; }
.inline-fields input[type=number] { width: 8rem; }
.button-row { display: flex; gap: 0.75rem; align-items: center; flex-wrap: wrap; }
.danger-link { color: var(--danger); }

.table-wrap { position: relative; overflow-x: auto; background: var(--panel); border: 1px solid var(--line); border-radius: 10px; }
table.keys { border-collapse: collapse; width: 100%; font-size: 0.9rem; }
table.keys th, table.keys td { text-align: left; vertical-align: top; padding: 0.65rem 0.6rem; border-bottom: 1px solid var(--line); }
table.keys thead th { background: #f0f2f5; font-size: 0.8rem; text-transform: uppercase; letter-spacing: 0.04em; color: var(--muted); white-space: nowrap; }
table.keys tbody tr:last-child > * { border-bottom: none; }
table.keys tbody th { font-weight: 600; min-width: 10rem; }
table.keys td.scopes code { font-size: 0.8rem; }
table.keys tbody th .small { font-weight: 400; }
table.keys td.dates time { white-space: nowrap; }
table.keys tr.revoked > * { background: #fafafa; color: var(--muted); }
table.keys .actions { margin-top: 0.35rem; display: flex; flex-wrap: wrap; gap: 0.1rem 0.75rem; }
ul.plain { list-style: none; margin: 0; padding: 0; }
ul.plain li { white-space: nowrap; }
.hint-key { white-space: nowrap; font-weight: 400; }
.key-line { margin: 0.2rem 0; }

.badge { display: inline-block; font-size: 0.75rem; font-weight: 600; padding: 0.1rem 0.5rem; border-radius: 999px;
  border: 1px solid transparent; white-space: nowrap; vertical-align: middle; text-transform: capitalize; }
.badge.public { background: #e4eaf8; color: #1a3f9c; }
.badge.private { background: #f1e8fb; color: #5b2a8c; }
.badge.active { background: #e3f4e8; color: var(--ok); }
.badge.revoked { background: #fde8e6; color: var(--danger); }
.badge.expired { background: #fdf1d8; color: var(--warn); }
.badge.replaced { background: #eef0f3; color: #39424e; text-decoration: none; }
.badge.report { background: #fff4d6; color: var(--warn); }

.filters { display: flex; flex-wrap: wrap; gap: 0.4rem; margin: 0 0 0.9rem; }
.filters a { padding: 0.25rem 0.75rem; border-radius: 999px; border: 1px solid var(--line); background: var(--panel); text-decoration: none; color: var(--fg); font-size: 0.9rem; }
.filters a[aria-current] { background: var(--accent); border-color: var(--accent); color: #fff; }
.filters .count { color: inherit; opacity: 0.75; font-size: 0.8rem; margin-left: 0.2rem; }

.alert { border-radius: 8px; padding: 0.75rem 1rem; margin: 0 0 1.25rem; border: 1px solid; }
.alert h2 { font-size: 1rem; margin: 0 0 0.4rem; }
.alert ul { margin: 0; padding-left: 1.2rem; }
.alert.error { background: #fdf0ef; border-color: #f1b8b2; color: #7a1a12; }
.alert.error a { color: #7a1a12; }
.alert.success { background: #ebf7ee; border-color: #a9d8b5; color: #0f4f21; }
.alert.warning { background: #fff8e6; border-color: #efcf7a; color: #5c3d00; }
.alert.ended { background: #f0f2f5; border-color: #c4cad3; color: var(--fg); }
.alert p { margin: 0.2rem 0; }
.notice { background: #f0f2f5; border-radius: 8px; padding: 0.75rem 1rem; }

.panel { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 1.25rem 1.5rem; margin: 0 0 1.25rem; }
.panel.warning { border-color: #f1b8b2; }
.panel .field + .field { margin-top: 1rem; }
.details { display: grid; grid-template-columns: max-content 1fr; gap: 0.5rem 1.5rem; margin: 0; }
.details dt { font-weight: 600; color: var(--muted); }
.details dd { margin: 0; }

.stack { display: flex; flex-direction: column; gap: 1.25rem; }
.key-form { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 1.5rem; max-width: 44rem; }
.field { display: flex; flex-direction: column; gap: 0.3rem; margin: 0; }
fieldset.field { border: none; padding: 0; }
legend { font-weight: 600; padding: 0; margin-bottom: 0.3rem; }
label { font-weight: 600; }
input[type=text], input[type=email], input[type=password], input[type=date], input[type=number], textarea {
  font: inherit; padding: 0.5rem 0.6rem; border: 1px solid #9aa3b0; border-radius: 6px; background: #fff; color: var(--fg); width: 100%; }
textarea { resize: vertical; }
input[readonly], textarea[readonly] { background: #f6f7f9; }
.has-error input, .has-error textarea, [aria-invalid=true] { border-color: var(--danger); border-width: 2px; }
.field-error { color: var(--danger); font-weight: 600; margin: 0; font-size: 0.9rem; }
ul.field-error { padding-left: 1.2rem; }
ul.field-error:empty { display: none; }
.checkbox { display: flex; align-items: flex-start; gap: 0.5rem; padding: 0.2rem 0; }
.checkbox input { width: 1.1rem; height: 1.1rem; margin-top: 0.2rem; flex: none; }
.checkbox label { font-weight: 400; }
.copy-row { display: flex; gap: 0.5rem; align-items: flex-start; }
.copy-row input, .copy-row textarea { flex: 1; }
.copy-status { min-height: 1.5em; margin: 0; color: var(--ok); font-weight: 600; }

.inline-form { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; }
.inline-form label { flex-basis: 100%; }
.inline-form input { flex: 1; min-width: 16rem; width: auto; }
.tester-result:empty { display: none; }
.tester-result { margin-top: 0.75rem; }
.result { border-radius: 8px; padding: 0.6rem 0.9rem; border: 1px solid; }
.result p { margin: 0.2rem 0; }
.result.ok { background: #ebf7ee; border-color: #a9d8b5; color: #0f4f21; }
.result.refused { background: #fdf0ef; border-color: #f1b8b2; color: #7a1a12; }
.empty { background: var(--panel); border: 1px dashed #b7bfcb; border-radius: 10px; padding: 2rem; text-align: center; color: var(--muted); }

.panel-head { display: flex; align-items: center; justify-content: space-between; gap: 1rem; flex-wrap: wrap; margin-bottom: 0.5rem; }
.panel-head h2 { margin: 0; }
.panel-head .filters { margin: 0; }
.totals { display: flex; align-items: center; flex-wrap: wrap; gap: 0.35rem 0.5rem; margin: 0 0 0.5rem; }
.totals strong { margin-right: 0.75rem; }
.swatch { display: inline-block; width: 0.8rem; height: 0.8rem; border-radius: 2px; }
.swatch.accepted { background: #2f6fdb; }
.swatch.refused { background: #c8372d; }
svg.chart { display: block; max-width: 100%; height: auto; }
svg.chart .bar:hover rect[fill=transparent] { fill: #eef2fb; }
details.numbers { margin: 0.5rem 0; }
details.numbers summary { cursor: pointer; color: var(--accent); }
details.numbers table { margin-top: 0.5rem; max-width: 28rem; }
table.keys.compact th, table.keys.compact td { padding: 0.4rem 0.6rem; }
details.allow > summary { list-style: none; display: inline-block; }
details.allow > summary::-webkit-details-marker { display: none; }
details.allow[open] > summary { background: #f0f2f5; }
.allow-preview { margin-top: 0.5rem; padding: 0.75rem; border: 1px solid var(--line); border-radius: 8px; background: #fbfcfd; max-width: 30rem; }
.allow-preview p { margin: 0 0 0.4rem; }
.allow-preview form { margin-top: 0.6rem; }
.preview-list li.added code { font-weight: 700; color: var(--ok); }
.preview-list li.removed code { text-decoration: line-through; color: var(--danger); }
.allow-choices { display: flex; flex-direction: column; align-items: flex-start; gap: 0.35rem; }

ol.trail { list-style: none; margin: 0; padding: 0; }
ol.trail .entry { padding: 0.7rem 0; border-bottom: 1px solid var(--line); }
ol.trail .entry:first-child { padding-top: 0; }
ol.trail .entry:last-child { border-bottom: none; padding-bottom: 0; }
.entry-head { display: flex; flex-wrap: wrap; gap: 0.25rem 0.6rem; align-items: baseline; }
.entry-head time { margin-left: auto; }
table.changes { border-collapse: collapse; margin-top: 0.35rem; font-size: 0.9rem; }
table.changes th { text-align: left; font-weight: 600; color: var(--muted); padding: 0.15rem 1rem 0.15rem 0; vertical-align: top; white-space: nowrap; width: 13rem; }
table.changes td { padding: 0.15rem 0; }
table.changes .from { color: var(--danger); text-decoration: line-through; }
table.changes .to code { color: var(--ok); }
table.changes .arrow { color: var(--muted); margin: 0 0.2rem; }
table.changes td { overflow-wrap: anywhere; }
table.changes ins, table.changes del { text-decoration: none; margin-right: 0.35rem; }
table.changes ins code { color: var(--ok); background: #ebf7ee; padding: 0 0.25rem; border-radius: 4px; }
table.changes del code { color: var(--danger); background: #fdf0ef; padding: 0 0.25rem; border-radius: 4px; text-decoration: line-through; }

.add-member { margin-top: 1.25rem; }
.add-member h2 { margin: 0; }
pre.code { background: #111827; color: #e5e7eb; padding: 0.8rem 1rem; border-radius: 8px; overflow-x: auto; font-size: 0.85rem; }

.first-request { margin-top: 1rem; border-radius: 8px; padding: 0.75rem 1rem; border: 1px dashed #b7bfcb; background: #fbfcfd; }
.first-request p { margin: 0.15rem 0; }
.first-request.received { border-style: solid; border-color: #a9d8b5; background: #ebf7ee; color: #0f4f21; }
.pulse { display: inline-block; width: 0.6rem; height: 0.6rem; border-radius: 50%; background: var(--accent); animation: pulse 1.2s ease-in-out infinite; }
@keyframes pulse { 50% { opacity: 0.25; } }
@media (prefers-reduced-motion: reduce) { .pulse { animation: none; } }

.switcher { position: relative; }
.switcher > summary { list-style: none; cursor: pointer; display: flex; align-items: center; gap: 0.5rem; padding: 0.2rem 0.5rem;
  border: 1px solid #4b5563; border-radius: 6px; }
.switcher > summary::-webkit-details-marker { display: none; }
.switch-label { font-size: 0.8rem; color: #b8c0cc; }
.switch-label::after { content: " ▾"; }
.switcher-menu { position: absolute; right: 0; top: calc(100% + 0.35rem); z-index: 5; background: var(--panel); color: var(--fg);
  border: 1px solid var(--line); border-radius: 8px; padding: 0.5rem; min-width: 14rem; box-shadow: 0 6px 20px rgba(0,0,0,0.15); }
.switcher-menu p { margin: 0 0.4rem 0.3rem; }
.switcher-menu ul { list-style: none; margin: 0; padding: 0; }
.switcher-menu form { margin: 0; }
.switch-to { display: flex; justify-content: space-between; gap: 1rem; width: 100%; font: inherit; text-align: left; background: none;
  border: none; border-radius: 6px; padding: 0.4rem; cursor: pointer; color: var(--fg); }
.switch-to:hover { background: #f0f2f5; }
.menu-button { display: none; }

.filters-form { display: grid; grid-template-columns: repeat(auto-fit, minmax(12rem, 1fr)); gap: 0.75rem 1rem; align-items: start; }
.filters-form select, .filters-form input { font: inherit; padding: 0.45rem 0.5rem; border: 1px solid #9aa3b0; border-radius: 6px; background: #fff; width: 100%; }
.filters-form .field + .field { margin-top: 0; }
.filter-buttons { grid-column: 1 / -1; }
.live-status { display: flex; align-items: center; gap: 0.5rem; margin: 0 0 0.75rem; color: var(--muted); font-size: 0.9rem; }
.live-status.paused .pulse { animation: none; background: #9aa3b0; }
ol.events { list-style: none; margin: 0 0 1rem; padding: 0; display: flex; flex-direction: column; gap: 0.75rem; }
ol.events .event { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 0.8rem 1rem; }
.event-head { display: flex; flex-wrap: wrap; align-items: baseline; gap: 0.25rem 0.75rem; margin-bottom: 0.4rem; }
.event-type { font-weight: 700; font-size: 0.95rem; background: #e4eaf8; color: var(--accent-dark); padding: 0.05rem 0.45rem; border-radius: 5px; }
.event-fields { display: grid; grid-template-columns: 8rem minmax(0, 1fr); gap: 0.2rem 1rem; margin: 0; font-size: 0.9rem; }
.event-fields dt { color: var(--muted); font-weight: 600; }
.event-fields dd { margin: 0; min-width: 0; overflow-wrap: anywhere; }
pre.properties { margin: 0; background: #f6f7f9; border: 1px solid var(--line); border-radius: 6px; padding: 0.4rem 0.6rem;
  font-size: 0.85rem; max-height: 16rem; overflow: auto; white-space: pre-wrap; overflow-wrap: anywhere; }

@media (max-width: 52rem) {
  .shell { grid-template-columns: minmax(0, 1fr); padding: 1rem; gap: 1rem; }
  .topbar { flex-wrap: wrap; padding: 0.5rem 1rem; gap: 0.5rem 0.75rem; }
  .menu-button:not([hidden]) { display: inline-block; margin-left: auto; }
  .account { width: 100%; justify-content: space-between; gap: 0.5rem; }
  .who { font-size: 0.8rem; overflow-wrap: anywhere; }
  .switcher-menu { left: 0; right: auto; }
  .has-menu .sidenav:not(.open) { display: none; }
  .sidenav { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 0.75rem; }
  .event-fields { grid-template-columns: 6.5rem minmax(0, 1fr); gap: 0.2rem 0.6rem; }
  table.changes, table.changes tbody, table.changes tr, table.changes th, table.changes td { display: block; }
  table.changes th { padding-top: 0.3rem; width: auto; }
  .copy-row { flex-wrap: wrap; }
  .copy-row input, .copy-row textarea { flex-basis: 100%; }
  .filters-form { gap: 0.5rem; padding: 1rem; }
}
`

export const DASHBOARD_JS = `
'use strict';
(function () {
  function status(el, text) {
    var region = el.closest('section, form, main').querySelector('.copy-status') || document.querySelector('.copy-status');
    if (region) region.textContent = text;
  }

  // Copy buttons: data-copy names the field whose value is copied.
  document.querySelectorAll('[data-copy]').forEach(function (button) {
    button.addEventListener('click', function () {
      var field = document.getElementById(button.getAttribute('data-copy'));
      if (!field) return;
      var label = field.labels && field.labels[0] ? field.labels[0].textContent : 'Value';
      function done() { status(button, label + ' copied to the clipboard.'); }
      function fallback() {
        field.focus();
        field.select();
        try { document.execCommand('copy'); done(); } catch (e) { status(button, 'Select the text and copy it with Ctrl+C.'); }
      }
      if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(field.value).then(done, fallback);
      else fallback();
    });
  });

  // Allowed origins: each line is checked by the server's own parser while it is typed.
  document.querySelectorAll('textarea[data-origin-check]').forEach(function (box) {
    var list = document.getElementById('origins-error');
    var form = box.form;
    var timer = 0, seq = 0, invalid = 0;
    function lines() {
      return box.value.split(/\\r\\n|\\r|\\n/).map(function (l) { return l.trim(); }).filter(function (l) { return l !== ''; });
    }
    function show(results) {
      list.textContent = '';
      invalid = 0;
      results.forEach(function (r) {
        if (r.ok) return;
        invalid++;
        var item = document.createElement('li');
        item.textContent = r.reason;
        list.appendChild(item);
      });
      box.setAttribute('aria-invalid', invalid ? 'true' : 'false');
      box.closest('.field').classList.toggle('has-error', invalid > 0);
    }
    function check() {
      var entries = lines();
      var mine = ++seq;
      if (entries.length === 0) { show([]); return Promise.resolve(); }
      var query = entries.map(function (e) { return 'entry=' + encodeURIComponent(e); }).join('&');
      return fetch(box.getAttribute('data-origin-check') + '?' + query, { headers: { accept: 'application/json' }, credentials: 'same-origin' })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (body) { if (body && mine === seq) show(body.results); })
        .catch(function () {});
    }
    box.addEventListener('input', function () { clearTimeout(timer); timer = setTimeout(check, 300); });
    box.addEventListener('blur', function () { clearTimeout(timer); check(); });
    if (form) form.addEventListener('submit', function (event) {
      if (invalid > 0) { event.preventDefault(); box.focus(); }
    });
  });

  // Origin tester: answers in place; without the script the form reloads the page.
  document.querySelectorAll('form[data-origin-tester]').forEach(function (form) {
    var result = document.getElementById('tester-result');
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      var origin = form.elements.origin.value.trim();
      fetch(form.getAttribute('data-origin-tester') + '?origin=' + encodeURIComponent(origin), { headers: { accept: 'application/json' }, credentials: 'same-origin' })
        .then(function (r) { if (!r.ok) throw new Error('HTTP ' + r.status); return r.json(); })
        .then(function (body) {
          var box = document.createElement('div');
          box.className = 'result ' + (body.allowed ? 'ok' : 'refused');
          var p = document.createElement('p');
          var strong = document.createElement('strong');
          var shown = body.origin === '' ? 'a request without an Origin header' : body.origin;
          if (body.allowed) {
            strong.textContent = 'Accepted.';
            p.append(strong, ' The entry ');
            var entry = document.createElement('code'); entry.textContent = body.entry;
            var seen = document.createElement('code'); seen.textContent = shown;
            p.append(entry, ' matches ', seen, '.');
          } else {
            strong.textContent = 'Refused';
            p.append(strong, ' (403 origin_not_allowed). ' + body.reason);
          }
          box.appendChild(p);
          if (body.keyState !== 'active') {
            var note = document.createElement('p');
            note.className = 'small';
            note.textContent = 'Note: this key is ' + body.keyState + ', so every request is refused (401) whatever its origin.';
            box.appendChild(note);
          }
          result.replaceChildren(box);
        })
        .catch(function () { form.submit(); });
    });
  });

  // First request: ask the dashboard every 2 s (for up to 15 minutes) until the key's first
  // accepted request, then say when it came. Only this dashboard is asked, nothing else.
  document.querySelectorAll('[data-first-request]').forEach(function (panel) {
    var url = panel.getAttribute('data-first-request');
    var state = panel.querySelector('.state');
    var detail = panel.querySelector('.detail');
    var tries = 0;
    function stamp(iso) { return iso.slice(0, 16).replace('T', ' ') + ' UTC'; }
    function again() { if (++tries < 450) setTimeout(poll, 2000); }
    function poll() {
      fetch(url, { headers: { accept: 'application/json' }, credentials: 'same-origin' })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (body) {
          if (body && body.receivedAt) {
            panel.classList.remove('waiting');
            panel.classList.add('received');
            state.textContent = '';
            var strong = document.createElement('strong');
            strong.textContent = 'First request received at ' + stamp(body.receivedAt) + '.';
            state.appendChild(strong);
            detail.textContent = 'The key works: its requests are counted under Requests below.';
            return;
          }
          if (body && body.refused) {
            detail.textContent = 'A request from ' + body.refused.origin + ' was refused at ' + stamp(body.refused.lastSeenAt) +
              ': that origin is not in the allowed list (see Refused origins below).';
          }
          again();
        }, again);
    }
    setTimeout(poll, 1000);
  });

  // Phone widths: the navigation folds behind a Menu button (without the script it stays open above the page).
  var menu = document.querySelector('.menu-button');
  var sidenav = document.getElementById('sidenav');
  if (menu && sidenav) {
    menu.hidden = false;
    document.body.classList.add('has-menu');
    menu.addEventListener('click', function () {
      var open = sidenav.classList.toggle('open');
      menu.setAttribute('aria-expanded', open ? 'true' : 'false');
      if (open) { var first = sidenav.querySelector('a'); if (first) first.focus(); }
    });
  }

  // Choosing a password: the two must match, said before anything is sent (the server checks again).
  document.querySelectorAll('form[data-password-pair]').forEach(function (form) {
    var first = form.elements.password, second = form.elements.confirm;
    var error = document.getElementById('confirm-error');
    var said = 'The two passwords differ; type the same password again.';
    function mark(differs) {
      second.setAttribute('aria-invalid', differs ? 'true' : 'false');
      second.closest('.field').classList.toggle('has-error', differs);
      error.textContent = differs ? said : '';
    }
    second.addEventListener('input', function () { if (second.getAttribute('aria-invalid') === 'true') mark(first.value !== second.value); });
    first.addEventListener('input', function () { if (second.getAttribute('aria-invalid') === 'true') mark(first.value !== second.value); });
    form.addEventListener('submit', function (event) {
      if (first.value === second.value) return;
      event.preventDefault();
      error.setAttribute('role', 'alert');
      mark(true);
      second.focus();
    });
  });

  // Events: while the tab is visible, ask every 2 s for events newer than the newest shown
  // and put them on top; paused while hidden, stopped after 15 minutes of asking, at most
  // 500 on the page. Only this dashboard is asked.
  document.querySelectorAll('[data-events-live]').forEach(function (status) {
    var list = document.getElementById('events');
    var text = status.querySelector('.text');
    var url = status.getAttribute('data-events-live');
    var since = status.getAttribute('data-since');
    var timer = 0, asked = 0, stopped = false, busy = false, lastNews = '';
    var LIVE = 'Live: new events appear at the top as they arrive.';
    function say(words, live) { text.textContent = words; status.classList.toggle('paused', !live); }
    function stop(words) { stopped = true; clearTimeout(timer); say(words, false); }
    function later() { clearTimeout(timer); if (!stopped && !document.hidden) timer = setTimeout(ask, 2000); }
    function ask() {
      if (stopped || busy || document.hidden) return;
      if (++asked > 450) { stop('Live view stopped after 15 minutes. Reload the page to resume it.'); return; }
      busy = true;
      fetch(url + '&since=' + encodeURIComponent(since), { headers: { accept: 'application/json' }, credentials: 'same-origin' })
        .then(function (r) { return r.json().then(function (body) { return { ok: r.ok, body: body }; }); })
        .then(function (answer) {
          busy = false;
          var body = answer.body;
          if (!answer.ok) { stop((body && body.error ? body.error.message + ' ' : '') + 'Live view stopped.'); return; }
          since = body.newest;
          if (body.data.length > 0) {
            var empty = document.getElementById('no-events');
            if (empty) empty.remove();
            list.insertAdjacentHTML('afterbegin', body.html);
            while (list.children.length > 500) list.lastElementChild.remove();
            lastNews = ' ' + body.data.length + ' new at ' + new Date().toISOString().slice(11, 19) + ' UTC' +
              (body.more ? '; more arrived than shown: reload to see them all.' : '.');
          }
          say(LIVE + lastNews, true);
          later();
        }, function () { busy = false; later(); });
    }
    document.addEventListener('visibilitychange', function () {
      if (stopped) return;
      if (document.hidden) { clearTimeout(timer); say('Live view paused while this tab is hidden.', false); }
      else { say(LIVE + lastNews, true); ask(); }
    });
    say(LIVE, true);
    later();
  });

  // After a refused submit, take keyboard focus to the list of problems.
  var summary = document.getElementById('error-summary');
  if (summary) summary.focus();
})();
`
