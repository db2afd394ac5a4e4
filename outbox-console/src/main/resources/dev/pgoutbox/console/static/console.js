// The console's page: routing between the four views, live overview, selections and writes.
import { el, get, post, token } from './dom.js';
import * as views from './views.js';

const $ = (selector) => document.querySelector(selector);
const state = { session: null, view: 'overview', after: 0, next: null, timer: null };

function flash(message, error = false) {
  $('#flash').textContent = message;
  $('#flash').className = error ? 'error' : 'ok';
}

async function guarded(work) {
  try { await work(); } catch (e) { flash(e.message, true); }
}

async function loadSession() {
  const s = await get('session');
  state.session = s;
  $('#schema').textContent = `schema ${s.schema}`;
  $('#mode').textContent = s.can_write ? 'writes enabled' : s.writes_enabled ? 'writes need a token or role' : 'read-only';
  $('#token-box').hidden = !s.token_prompt;
  for (const b of document.querySelectorAll('.actions button.write')) b.disabled = !s.writes_enabled;
}

async function show(view) {
  state.view = ['overview', 'dead-letters', 'blocked', 'relays'].includes(view) ? view : 'overview';
  for (const s of document.querySelectorAll('.view')) s.hidden = s.id !== state.view;
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('active', a.dataset.view === state.view);
  await refresh();
}

async function refresh() {
  const o = await get('overview');
  $('#health').textContent = o.healthy ? 'healthy' : 'degraded';
  $('#health').className = `badge ${o.healthy ? 'healthy' : 'degraded'}`;
  if (state.view === 'overview') views.overview(o);
  if (state.view === 'dead-letters') await loadDeadLetters();
  if (state.view === 'blocked') views.blocked(await get('blocked'), state.session, actions);
  if (state.view === 'relays') views.relays(await get('relays'));
}

function filters() {
  const form = new FormData($('#filters'));
  const query = new URLSearchParams();
  for (const [k, v] of form) if (String(v).trim()) query.set(k, String(v).trim());
  return query;
}

async function loadDeadLetters() {
  const query = filters();
  if (state.after) query.set('after', state.after);
  const page = await get(`dead-letters?${query}`);
  state.next = page.next;
  $('#next-page').disabled = page.next == null;
  views.deadLetters(page, state.session, actions);
}

/** Preview what a write touches, confirm naming the count, then write exactly that. */
async function write(action, selection) {
  const preview = await post('preview', { action, ...selection });
  if (preview.matched === 0) { flash(`Nothing to ${action}: no event matches (${preview.selection}).`, true); return; }
  $('#confirm-text').textContent = `${action === 'retry' ? 'Retry' : 'Discard'} ${preview.matched} event${preview.matched === 1 ? '' : 's'} (${preview.selection})?`;
  $('#confirm-list').replaceChildren(...preview.events.map((e) => el('li', {}, `${e.id} ${e.aggregate_type}/${e.aggregate_id} ${e.event_type}`)));
  const dialog = $('#confirm');
  dialog.returnValue = '';
  dialog.showModal();
  await new Promise((resolve) => dialog.addEventListener('close', resolve, { once: true }));
  if (dialog.returnValue !== 'ok') { flash('Cancelled: nothing changed.'); return; }
  const done = await post(action, { ...selection, expected: preview.matched });
  flash(`${action === 'retry' ? 'Retried' : 'Discarded'} ${done.changed} of ${done.matched} event(s) (${done.selection}).`);
  await refresh();
}

const actions = {
  open: (id) => guarded(async () => views.event(await get(`events/${encodeURIComponent(id)}`))),
  write: (action, selection) => guarded(() => write(action, selection)),
};

function picked() {
  return [...document.querySelectorAll('#dead-table .pick:checked')].map((c) => c.value);
}

function filtered(action, what) {
  const f = filters();
  if (what === 'aggregate') {
    if (!f.get('aggregate_type') || !f.get('aggregate_id')) { flash('Filter on an aggregate type and id first.', true); return; }
    actions.write(action, { aggregate_type: f.get('aggregate_type'), aggregate_id: f.get('aggregate_id') });
  } else {
    if (!f.get('type')) { flash('Filter on an event type first.', true); return; }
    actions.write(action, { event_type: f.get('type') });
  }
}

function wire() {
  $('#filters').addEventListener('submit', (e) => { e.preventDefault(); state.after = 0; guarded(loadDeadLetters); });
  $('#first-page').addEventListener('click', () => { state.after = 0; guarded(loadDeadLetters); });
  $('#next-page').addEventListener('click', () => { state.after = state.next; guarded(loadDeadLetters); });
  $('#select-all').addEventListener('change', (e) => { for (const c of document.querySelectorAll('#dead-table .pick')) c.checked = e.target.checked; });
  for (const action of ['retry', 'discard']) {
    $(`#${action}-selected`).addEventListener('click', () => {
      const ids = picked();
      if (ids.length) actions.write(action, { ids }); else flash('Select dead letters first.', true);
    });
    $(`#${action}-aggregate`).addEventListener('click', () => filtered(action, 'aggregate'));
    $(`#${action}-type`).addEventListener('click', () => filtered(action, 'type'));
  }
  $('#token').addEventListener('change', (e) => { token(e.target.value); guarded(loadSession); });
  window.addEventListener('hashchange', () => guarded(() => show(location.hash.slice(1))));
}

async function start() {
  if (location.hash.startsWith('#token=')) {
    token(decodeURIComponent(location.hash.slice('#token='.length)));
    history.replaceState(null, '', `${location.pathname}#overview`);
  }
  $('#token').value = token();
  wire();
  await guarded(async () => { await loadSession(); await show(location.hash.slice(1)); });
  state.timer = setInterval(() => { if (!document.hidden && state.view === 'overview') guarded(refresh); }, 5000);
  document.body.dataset.ready = 'true';
}

start();
