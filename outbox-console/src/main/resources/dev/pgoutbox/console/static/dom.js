// DOM and HTTP helpers of the console. Everything shown is built with text nodes, never parsed as markup:
// event data is hostile input, and renders as text whatever it holds.

/** An element: attributes from `attrs`, children appended as nodes or as text. */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else if (value === true) node.setAttribute(name, '');
    else if (value !== false && value != null) node.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child == null) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Replaces the rows of a table body. */
export function fill(tbody, rows, empty) {
  tbody.replaceChildren(...(rows.length ? rows : [el('tr', {}, el('td', { colspan: 8 }, empty))]));
}

/** A duration in milliseconds, as an operator reads it. */
export function age(ms) {
  if (ms == null) return '';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** An ISO instant in the browser's time zone. */
export function time(iso) {
  return iso ? new Date(iso).toLocaleString() : '';
}

const TOKEN = 'pgoutbox-console-token';

/** The write token: from the #token= fragment admin serve prints (then dropped from the URL). */
export function token(value) {
  if (value !== undefined) sessionStorage.setItem(TOKEN, value);
  return sessionStorage.getItem(TOKEN) || '';
}

/** GET an API path; the parsed JSON, or an Error carrying the server's message. */
export async function get(path) {
  return answer(await fetch(`api/${path}`, { headers: { Accept: 'application/json', 'X-Pgoutbox-Token': token() } }));
}

/** POST a JSON body with what the console requires of a write (see OutboxConsole). */
export async function post(path, body) {
  return answer(await fetch(`api/${path}`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      'X-Pgoutbox-Console': '1',
      'X-Pgoutbox-Token': token(),
    },
    body: JSON.stringify(body),
  }));
}

async function answer(response) {
  const body = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
  if (!response.ok) {
    const error = new Error(body.error || `HTTP ${response.status}`);
    error.status = response.status;
    error.code = body.code;
    throw error;
  }
  return body;
}
