// The console's views: each renders one API answer into the page, as text.
import { el, fill, age, time } from './dom.js';

const $ = (selector) => document.querySelector(selector);

export function overview(o) {
  const card = (label, value, bad) =>
    el('div', { class: bad ? 'card bad' : 'card', 'data-card': label }, el('div', { class: 'value' }, value), el('div', { class: 'label' }, label));
  $('#cards').replaceChildren(
    card('Pending', o.pending),
    card('Oldest pending', age(o.oldest_pending_age_ms)),
    card('Dead letters', o.dead_letters, o.dead_letters > 0),
    card('Blocked aggregates', o.blocked_aggregates, o.blocked_aggregates > 0),
    card('Published / s (last min)', o.published_per_second.toFixed(1)),
    card('Relays alive', `${o.relays_alive} of ${o.relays}`, o.relays_alive === 0),
    card('Oldest transaction', age(o.oldest_transaction_age_ms)),
  );
  $('#problems').replaceChildren(...o.problems.map((p) => el('li', {}, p)));
  const now = Date.parse(o.time);
  $('#chart').replaceChildren(chart([...o.history, { t: now, pending: o.pending, dead_letters: o.dead_letters }], now));
}

/** The last hour as an inline SVG: pending (blue) and dead letters (red), one polyline each. */
function chart(points, now) {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = (tag, attrs) => {
    const node = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
    return node;
  };
  const [w, h, pad] = [760, 180, 28];
  const root = svg('svg', { viewBox: `0 0 ${w} ${h}`, role: 'img', 'aria-label': 'pending and dead letters, last hour' });
  const max = Math.max(1, ...points.map((p) => Math.max(p.pending, p.dead_letters)));
  const x = (t) => pad + ((t - (now - 3600000)) / 3600000) * (w - 2 * pad);
  const y = (v) => h - pad - (v / max) * (h - 2 * pad);
  root.append(svg('line', { x1: pad, y1: h - pad, x2: w - pad, y2: h - pad, stroke: '#d8dee4' }));
  for (const [series, cls] of [['pending', 'pending'], ['dead_letters', 'dead']]) {
    root.append(svg('polyline', { class: cls, points: points.map((p) => `${x(p.t).toFixed(1)},${y(p[series]).toFixed(1)}`).join(' ') }));
  }
  const label = (text, lx, ly) => { const t = svg('text', { x: lx, y: ly }); t.textContent = text; return t; };
  root.append(label(String(max), 2, pad), label('0', 2, h - pad), label('-60 min', pad, h - 8), label('now', w - pad - 16, h - 8),
    label(`pending (blue), dead letters (red); ${points.length} samples`, pad + 60, 14));
  return root;
}

export function deadLetters(page, session, actions) {
  const rows = page.items.map((e) => el('tr', { 'data-id': e.id },
    el('td', {}, el('input', { type: 'checkbox', class: 'pick', value: e.id, 'aria-label': `select ${e.id}` })),
    el('td', {}, el('button', { class: 'link', onclick: () => actions.open(e.id) }, e.id.slice(0, 8))),
    el('td', { class: 'aggregate' }, `${e.aggregate_type}/${e.aggregate_id}`),
    el('td', {}, e.event_type),
    el('td', {}, e.attempts),
    el('td', {}, time(e.dead_at)),
    el('td', { class: 'error' }, e.last_error ?? ''),
    el('td', {},
      el('button', { class: 'write retry-one', disabled: !session.writes_enabled, onclick: () => actions.write('retry', { ids: [e.id] }) }, 'Retry'), ' ',
      el('button', { class: 'write danger discard-one', disabled: !session.writes_enabled, onclick: () => actions.write('discard', { ids: [e.id] }) }, 'Discard'))));
  fill($('#dead-table tbody'), rows, 'No dead letters match.');
}

export function event(e) {
  const row = (name, value) => [el('dt', {}, name), el('dd', {}, value ?? '')];
  const pretty = (text) => { try { return JSON.stringify(JSON.parse(text), null, 2); } catch { return text; } };
  $('#event').replaceChildren(
    el('h2', {}, `Event ${e.id}`),
    el('dl', {},
      row('State', e.state + (e.parked ? ' (parked)' : '')), row('Aggregate', `${e.aggregate_type}/${e.aggregate_id}`),
      row('Event type', e.event_type), row('Position', e.position), row('Attempts', e.attempts),
      row('Last error', e.last_error), row('Written', time(e.created_at)), row('Dead at', time(e.dead_at)),
      row('Retry after', time(e.retry_after)), row('Published', time(e.processed_at))),
    el('h2', {}, 'Errors'),
    (e.errors ?? []).length === 0 ? el('p', {}, 'No failed attempt recorded.')
      : el('table', { class: 'errors' }, el('tbody', {}, ...e.errors.map((f) => el('tr', {},
        el('td', {}, `attempt ${f.attempt}`), el('td', {}, time(f.at)), el('td', {}, f.dead ? 'dead' : ''),
        el('td', { class: 'error' }, f.error))))),
    el('h2', {}, 'Headers'),
    e.headers != null ? el('pre', {}, pretty(e.headers))
      : el('p', { class: 'hidden-headers' }, `Values hidden with the payload; names: ${e.header_names.join(', ') || '(none)'}`),
    el('h2', {}, 'Payload'),
    e.payload_hidden ? el('p', { class: 'hidden-payload' }, 'Hidden: payloads are shown only when the host enables them (pgoutbox.console.show-payloads, admin serve --show-payloads).')
      : el('pre', {}, pretty(e.payload ?? 'null')),
  );
  $('#event').hidden = false;
}

export function blocked(page, session, actions) {
  const rows = page.items.map((e) => el('tr', { 'data-id': e.id },
    el('td', { class: 'aggregate' }, `${e.aggregate_type}/${e.aggregate_id}`),
    el('td', {}, el('button', { class: 'link', onclick: () => actions.open(e.id) }, e.id.slice(0, 8))),
    el('td', {}, e.event_type),
    el('td', {}, e.reason),
    el('td', { class: 'error' }, e.last_error ?? ''),
    el('td', {}, el('button', { class: 'write', disabled: !session.writes_enabled,
      onclick: () => actions.write('retry', { aggregate_type: e.aggregate_type, aggregate_id: e.aggregate_id }) }, 'Retry aggregate'))));
  fill($('#blocked-table tbody'), rows, 'No aggregate is blocked.');
}

export function relays(r) {
  fill($('#relays-table tbody'), r.relays.map((i) => el('tr', {},
    el('td', {}, i.relay_name), el('td', {}, el('code', {}, i.instance_id.slice(0, 8))),
    el('td', {}, i.wal_slot ? `WAL (slot ${i.wal_slot})` : 'table'), el('td', {}, i.ordering), el('td', {}, i.dead_letter_policy),
    el('td', {}, `${age(i.heartbeat_age_ms)} ago`),
    el('td', { class: i.alive ? 'alive' : 'dead-relay' }, i.alive ? 'alive' : 'no heartbeat')),
  ), 'No relay is registered.');
  fill($('#slots-table tbody'), r.wal_slots.map((s) => el('tr', {},
    el('td', {}, s.slot_name), el('td', {}, s.active ? 'streaming' : 'no reader'), el('td', { class: s.lost ? 'error' : '' }, s.wal_status ?? ''),
    el('td', {}, `${s.lag_bytes} bytes`), el('td', {}, age(s.lag_time_ms))),
  ), 'No WAL slot.');
}
