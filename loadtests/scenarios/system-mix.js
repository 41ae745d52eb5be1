// system-mix: the asynchronous study's load (cases 1a-3): getData and getStatus, getHistory,
// getAllHistory, plus the other gateway reads, each an exec function the engine's
// scenarios call at their own arrival rate (ELVES_K6_SCENARIOS).
// getStatus and getImage read requests seeded in setup(): k6 VUs share no memory, so an
// exec cannot read the id another one just posted.
import { builtinScenario, elvesOptions, plannedExecs } from '../lib/options.js';
import * as gw from '../lib/gateway.js';

export { getStatusOfSeed as getStatus, getImageOfSeed as getImage } from '../lib/gateway.js';

export const options = elvesOptions(builtinScenario('system-mix'));

export function setup() {
  return gw.gatewaySetup(plannedExecs(), 10);
}

// POST a data request; the plot is built behind the queue, nobody waits for it here.
export function getData() {
  gw.postData();
}

export function getHistory() {
  gw.getHistory();
}

export function getAllHistory() {
  gw.getAllHistory();
}

export function getUser() {
  gw.getUser();
}

export function getAllUsers() {
  gw.getAllUsers();
}

export default getData;
