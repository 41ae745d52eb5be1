// journeys: whole visits instead of single calls, after the page-visit study: weighted user
// profiles (forecaster, browser, lost user; the engine's mix sets the weights, by default the
// study's, and the rate counts journeys), each a sequence of calls with a think time
// between them, per-request timeouts (API 4 s, the plot 32 s) and up to 3 attempts on
// failures that are safe to retry (see lib/http.js).
import { sleep } from 'k6';
import { config } from '../lib/config.js';
import { builtinScenario, elvesOptions } from '../lib/options.js';
import { jsonOf } from '../lib/http.js';
import { randomUuid } from '../lib/data.js';
import * as gw from '../lib/gateway.js';

const API_CALL = { timeout: '4s', attempts: 3 };
const PLOT_PAGE = { timeout: '32s', attempts: 3 };

export const options = elvesOptions(builtinScenario('journeys'));

export function setup() {
  gw.gatewaySetup(new Set(), 0); // journeys make their own requests: no seed pool
}

function think() {
  sleep(config.thinkSeconds);
}

// The request ids in a history page, whatever its envelope ([...], {items}, {content}).
function requestIdsIn(res) {
  const body = jsonOf(res);
  let items = [];
  if (Array.isArray(body)) items = body;
  else if (body && typeof body === 'object') items = body.items || body.content || body.activities || [];
  return items.map((a) => a && (a.requestId || (a.data && a.data.requestId))).filter((id) => !!id);
}

// The "job seeker" of the page-visit study: came for one thing, a plot. Signs in, asks for
// it, watches the status until it is ready, looks at it, glances at the history.
export function forecaster() {
  gw.getUser(API_CALL);
  think();
  const id = gw.postData(API_CALL);
  if (!id) return;
  const status = gw.waitForPlot(id, Date.now(), API_CALL);
  if (status === 'DONE') {
    think();
    gw.getImage(id, PLOT_PAGE);
  }
  think();
  gw.getHistory(API_CALL);
}

// The regular: comes back to look at what was there, asks nothing new.
export function browser() {
  const history = gw.getHistory(API_CALL);
  think();
  const ids = requestIdsIn(history);
  if (ids.length > 0) {
    gw.getStatus(ids[0], API_CALL);
    think();
  }
  gw.getAllHistory(API_CALL);
  think();
  gw.getUser(API_CALL);
}

// The lost visitor: follows a stale link to a plot that does not exist and leaves.
// A 404 is the right answer here, not a failure.
export function lostUser() {
  const gone = randomUuid();
  gw.getStatus(gone, { ...API_CALL, expected: [{ min: 200, max: 299 }, 404] });
  think();
  gw.getImage(gone, { ...PLOT_PAGE, expected: [{ min: 200, max: 299 }, 404] });
}

export default forecaster;
