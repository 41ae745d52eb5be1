// The registry's internal API (DESIGN.md), straight, as the original registry benchmark
// did: addAppLog, getAppLog, getUser, getAllUsers. Users are addressed by id (the `sub`
// of their token); the bearer token still goes along for a registry that checks it, and every
// call carries the registry's credential (registryHeaders: the run credential under the engine).
import { config } from './config.js';
import { call as plainCall, currentUser, registryHeaders } from './http.js';

const API = `${config.registryUrl}/api/v1`;

function call(req) {
  return plainCall({ ...req, headers: registryHeaders() });
}

// POST /api/v1/logs: one activity log, as the gateway would have sent through the queue.
export function addAppLog(user = currentUser()) {
  return call({
    token: user.token, endpoint: 'addAppLog', method: 'POST', url: `${API}/logs`, name: '/api/v1/logs',
    body: { userId: user.id, endpoint: 'addAppLog', requestId: null },
  });
}

// GET /api/v1/logs?user=..&limit=20, or all=true (ELVES_APPLOG_ALL) like the original.
export function getAppLog(user = currentUser()) {
  const query = config.appLogAll ? 'all=true' : 'limit=20';
  return call({
    token: user.token, endpoint: 'getAppLog',
    url: `${API}/logs?user=${encodeURIComponent(user.id)}&${query}`,
    name: `/api/v1/logs?user={id}&${query}`,
  });
}

export function getUser(user = currentUser()) {
  return call({
    token: user.token, endpoint: 'getUser', url: `${API}/users/${encodeURIComponent(user.id)}`,
    name: '/api/v1/users/{id}',
  });
}

export function getAllUsers(user = currentUser()) {
  return call({
    token: config.adminToken || user.token, endpoint: 'getAllUsers', url: `${API}/users`, name: '/api/v1/users',
  });
}
