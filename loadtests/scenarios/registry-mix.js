// registry-mix: the study's registry benchmark (addAppLog, getAppLog, getUser, getAllUsers;
// its default mix is in elves.engine.models.scenarios), straight at the registry
// (ELVES_REGISTRY_URL), bypassing the gateway.
import { config } from '../lib/config.js';
import { builtinScenario, elvesOptions } from '../lib/options.js';
import { requireTarget } from '../lib/target.js';
import { registryHeaders, userAt } from '../lib/http.js';
import * as registry from '../lib/registry.js';

export const options = elvesOptions(builtinScenario('registry-mix'));

export function setup() {
  requireTarget('the registry', 'getAllUsers', `${config.registryUrl}/api/v1/users`, config.adminToken || userAt(0).token,
    'ELVES_REGISTRY_URL', registryHeaders());
  // One log per user first, so that getUser finds every user from the first second.
  for (let i = 0; i < Math.max(1, config.tokens.length); i += 1) {
    registry.addAppLog(userAt(i));
  }
}

export function addAppLog() {
  registry.addAppLog();
}

export function getAppLog() {
  registry.getAppLog();
}

export function getUser() {
  registry.getUser();
}

export function getAllUsers() {
  registry.getAllUsers();
}

export default addAppLog;
