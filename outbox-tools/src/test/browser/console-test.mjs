// Drives the pgoutbox web console in headless Chromium (Debian's /usr/bin/chromium, no browser
// download) for ConsoleBrowserIT and ConsoleBrowserBootIT, and prints one JSON document of what it
// saw. The Java tests assert on it and on the database.
//
// Usage: node console-test.mjs <config.json>
// config: { writeUrl, token?, readOnlyUrl?, deadId, discardId, untouchedId, untouchedAggregateType,
//           untouchedAggregateId, screenshots, userDataDir, auth?: {username, password}, noRoleAuth? }
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const result = { screenshots: [], dialogs: [], pageErrors: [] };
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run'];

const context = await chromium.launchPersistentContext(config.userDataDir, {
  executablePath: '/usr/bin/chromium', headless: true, args: ARGS,
  viewport: { width: 1280, height: 860 }, httpCredentials: config.auth,
});
context.setDefaultTimeout(30000);

function watch(page) {
  page.on('dialog', (d) => { result.dialogs.push(d.message()); d.dismiss(); });
  page.on('pageerror', (e) => result.pageErrors.push(String(e)));
  return page;
}

async function shot(page, name) {
  const path = join(config.screenshots, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  result.screenshots.push(path);
}

async function open(page, url, view) {
  await page.goto(url);
  await page.waitForSelector('body[data-ready="true"]');
  if (view) {
    await page.evaluate((v) => { location.hash = v; }, view);
    await page.waitForSelector(`#${view}:not([hidden])`);
  }
}

/** Clicks a write button, confirms in the page's dialog, returns the confirmation and the flash. */
async function writeFromPage(page, button) {
  const before = await page.textContent('#flash');
  await page.click(button);
  await page.waitForSelector('#confirm[open]');
  const confirm = await page.textContent('#confirm-text');
  await page.click('#confirm-ok');
  await page.waitForFunction((b) => document.querySelector('#flash').textContent !== b, before);
  return { confirm, flash: await page.textContent('#flash'), error: await page.evaluate(() => document.querySelector('#flash').className === 'error') };
}

/** A same-origin write from the page's own context, with every header the page sends. */
function sameOriginPost(page, path, body, token) {
  return page.evaluate(async ({ path, body, token }) => {
    const r = await fetch(`api/${path}`, { method: 'POST', body: JSON.stringify(body),
      headers: { 'Content-Type': 'application/json', 'X-Pgoutbox-Console': '1', 'X-Pgoutbox-Token': token || '' } });
    return { status: r.status, body: await r.json() };
  }, { path, body, token });
}

try {
  // 1. Overview, with the write token from the URL fragment admin serve prints.
  const page = watch(await context.newPage());
  await open(page, config.writeUrl + (config.token ? `#token=${config.token}` : ''));
  await page.waitForSelector('[data-card="Dead letters"]');
  result.overviewDeadLetters = await page.textContent('[data-card="Dead letters"] .value');
  result.overviewHasChart = await page.locator('#chart svg polyline').count();
  result.tokenLeftInUrl = page.url().includes('token=');
  result.mode = await page.textContent('#mode');
  await shot(page, 'console-overview');

  // 2. Dead letters: the planted one, its hostile aggregate id and error rendered as text.
  await open(page, config.writeUrl, 'dead-letters');
  const row = `#dead-table tr[data-id="${config.deadId}"]`;
  await page.waitForSelector(row);
  result.deadLetterRows = await page.locator('#dead-table tbody tr[data-id]').count();
  result.xssAggregateText = await page.textContent(`${row} td.aggregate`);
  result.xssErrorText = await page.textContent(`${row} td.error`);
  result.injectedElements = await page.evaluate(() => document.querySelectorAll('main img, main script, main iframe').length);
  await shot(page, 'console-dead-letters');

  // 3. One event, as `show` prints it: payload hidden.
  await page.click(`${row} button.link`);
  await page.waitForSelector('#event:not([hidden])');
  result.eventTitle = await page.textContent('#event h2');
  result.eventPayloadHidden = await page.locator('#event .hidden-payload').count();
  await shot(page, 'console-event');

  // 4. Blocked aggregates and relays.
  await open(page, config.writeUrl, 'blocked');
  await page.waitForSelector(`#blocked-table tr[data-id="${config.deadId}"]`);
  result.blockedReason = await page.textContent(`#blocked-table tr[data-id="${config.deadId}"] td:nth-child(4)`);
  await shot(page, 'console-blocked');
  await open(page, config.writeUrl, 'relays');
  await page.waitForSelector('#relays-table tbody tr');
  result.relaysText = await page.textContent('#relays-table tbody');
  await shot(page, 'console-relays');

  // 5. Retry the planted dead letter and discard another, from the page, confirming the count.
  await open(page, config.writeUrl, 'dead-letters');
  await page.waitForSelector(row);
  result.retry = await writeFromPage(page, `${row} button.retry-one`);
  await page.waitForSelector(`#dead-table tr[data-id="${config.discardId}"]`);
  result.discard = await writeFromPage(page, `#dead-table tr[data-id="${config.discardId}"] button.discard-one`);
  result.rowsAfterWrites = await page.locator('#dead-table tbody tr[data-id]').count();
  // Filter by the untouched one's aggregate: one row left.
  await page.fill('#filters [name="aggregate_id"]', config.untouchedAggregateId);
  await page.fill('#filters [name="aggregate_type"]', config.untouchedAggregateType);
  await page.click('#filters button[type="submit"]');
  await page.waitForFunction(() => document.querySelectorAll('#dead-table tbody tr[data-id]').length === 1);
  result.filteredRows = await page.locator('#dead-table tbody tr[data-id]').count();
  result.filteredRowId = await page.getAttribute('#dead-table tbody tr[data-id]', 'data-id');

  // 6. Cross-site: a page of another origin tries a fetch (blocked by the browser's preflight)
  //    and a form post (no preflight: the console itself must refuse it).
  await context.route('http://evil.test/**', (route) => route.fulfill({ contentType: 'text/html', body:
    `<form id="f" method="post" enctype="text/plain" action="${config.writeUrl}api/discard">` +
    `<input name='{"ids":["${config.untouchedId}"],"x":"' value='"}'></form>` }));
  const evil = watch(await context.newPage());
  await evil.goto('http://evil.test/');
  result.crossSiteFetch = await evil.evaluate(async ({ url, id, token }) => {
    try {
      const r = await fetch(`${url}api/discard`, { method: 'POST', body: JSON.stringify({ ids: [id] }),
        headers: { 'Content-Type': 'application/json', 'X-Pgoutbox-Console': '1', 'X-Pgoutbox-Token': token || '' } });
      return `answered ${r.status}`;
    } catch (e) { return `blocked: ${e.message}`; }
  }, { url: config.writeUrl, id: config.untouchedId, token: config.token });
  const [formAnswer] = await Promise.all([
    evil.waitForResponse((r) => r.url().endsWith('api/discard') && r.request().method() === 'POST'),
    evil.evaluate(() => document.getElementById('f').submit()),
  ]);
  result.crossSiteFormStatus = formAnswer.status();
  result.crossSiteFormBody = await formAnswer.text();
  await evil.close();

  // 7. A write without the token (admin serve) or without the role (Spring Security).
  const bare = await chromium.launchPersistentContext(`${config.userDataDir}-bare`, {
    executablePath: '/usr/bin/chromium', headless: true, args: ARGS, httpCredentials: config.noRoleAuth,
    viewport: { width: 1280, height: 860 } });
  const stranger = watch(await bare.newPage());
  await open(stranger, config.writeUrl, 'dead-letters');
  await stranger.waitForSelector(`#dead-table tr[data-id="${config.untouchedId}"]`);
  result.unauthorizedMode = await stranger.textContent('#mode');
  result.unauthorized = await writeFromPage(stranger, `#dead-table tr[data-id="${config.untouchedId}"] button.retry-one`);
  await bare.close();

  // 8. A read-only console: write buttons disabled, and the API refuses a same-origin write.
  if (config.readOnlyUrl) {
    const ro = watch(await context.newPage());
    await open(ro, config.readOnlyUrl, 'dead-letters');
    await ro.waitForSelector(`#dead-table tr[data-id="${config.untouchedId}"]`);
    result.readOnlyMode = await ro.textContent('#mode');
    result.readOnlyButtonsDisabled = await ro.locator('button.write:disabled').count();
    result.readOnlyButtons = await ro.locator('button.write').count();
    result.readOnlyRetry = await sameOriginPost(ro, 'retry', { ids: [config.untouchedId] }, config.token);
    result.readOnlyDiscard = await sameOriginPost(ro, 'discard', { ids: [config.untouchedId] }, config.token);
    await shot(ro, 'console-read-only');
  }
  result.pwned = await page.evaluate(() => window.__pwned === 1);
  result.ok = true;
} catch (e) {
  result.ok = false;
  result.error = String(e && e.stack || e);
} finally {
  await context.close();
}
process.stdout.write(JSON.stringify(result) + '\n');
