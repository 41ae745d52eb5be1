// The k6 options of every Elves script: the engine's scenarios (JSON in ELVES_K6_SCENARIOS)
// or, standalone, a small open-model run of the script's default mix.
import { config } from './config.js';

// Tags that become Prometheus labels. `url` is left out on purpose: request ids in paths
// would make one series per request. Requests carry `name` (the path template) instead.
// `error` (the message) is left out too: it can quote the URL; `error_code` says enough.
export const SYSTEM_TAGS = Object.freeze([
  'status', 'method', 'name', 'group', 'check', 'error_code', 'scenario', 'expected_response',
]);

// One constant-arrival-rate scenario per exec, sharing `ratePerMinute` by weight: the same
// shape the engine produces, so a standalone `k6 run` exercises what a LoadTest would.
// VUs: enough for the iterations in flight (rate x iteration time, plus room for a
// 2 s stall), so that k6 never drops an iteration for want of a VU.
export function defaultScenarios(mix, ratePerMinute, duration, iterationSeconds) {
  const total = Object.values(mix).reduce((a, b) => a + b, 0);
  const scenarios = {};
  for (const [exec, weight] of Object.entries(mix)) {
    if (weight <= 0) continue;
    // Per hour keeps small shares (0.33 of 60/min) from rounding to nothing.
    const perHour = Math.max(1, Math.round((ratePerMinute * 60 * weight) / total));
    const preAllocatedVUs = Math.max(2, Math.ceil((perHour / 3600) * (iterationSeconds + 2) * 1.5));
    scenarios[exec] = {
      executor: 'constant-arrival-rate',
      exec,
      rate: perHour,
      timeUnit: '1h',
      duration,
      preAllocatedVUs,
      maxVUs: Math.max(20, preAllocatedVUs * 4),
    };
  }
  return scenarios;
}

function parseScenarios(json, exported) {
  let scenarios;
  try {
    scenarios = JSON.parse(json);
  } catch (e) {
    throw new Error(`ELVES_K6_SCENARIOS is not valid JSON: ${e.message}`);
  }
  if (scenarios === null || typeof scenarios !== 'object' || Array.isArray(scenarios)
      || Object.keys(scenarios).length === 0) {
    throw new Error('ELVES_K6_SCENARIOS must be a JSON object with at least one scenario');
  }
  for (const [name, scenario] of Object.entries(scenarios)) {
    const exec = scenario.exec || 'default';
    if (!exported.includes(exec)) {
      throw new Error(`ELVES_K6_SCENARIOS.${name}.exec = ${JSON.stringify(exec)} is not a function`
        + ` of this script; it exports: ${exported.join(', ')}`);
    }
  }
  return scenarios;
}

function thresholdsWanted() {
  if (config.thresholds === 'auto') return config.scenariosJson === '';
  return config.thresholds === 'true';
}

// script: {defaultMix: exec name -> weight for a standalone run, exported: every exec
// function the script exports (to name a wrong exec in ELVES_K6_SCENARIOS before k6 does,
// vaguely), iterationSeconds: how long one iteration takes on a healthy system}.
export function elvesOptions(script) {
  const { defaultMix, exported, iterationSeconds = 0.5 } = script;
  const scenarios = config.scenariosJson !== ''
    ? parseScenarios(config.scenariosJson, exported)
    : defaultScenarios(defaultMix, config.defaultRatePerMinute, config.defaultDuration, iterationSeconds);
  planned = Object.values(scenarios).map((s) => s.exec || 'default');
  const options = {
    scenarios,
    systemTags: SYSTEM_TAGS,
    // setup() may wait for seed plots; give it room beyond the plot deadline.
    setupTimeout: `${Math.ceil(config.plotDeadlineSeconds + 60)}s`,
    // Summary trends people read at the end of a standalone run.
    summaryTrendStats: ['avg', 'min', 'med', 'p(90)', 'p(95)', 'p(99)', 'max'],
  };
  if (config.testId !== '') {
    // On every sample, setup's included (the engine also tags its scenarios).
    options.tags = { testid: config.testId };
  }
  if (thresholdsWanted()) {
    // For people running a script by hand; under the engine the verdict comes from
    // Prometheus over all runners, and a crossed threshold would only muddle k6's exit code.
    options.thresholds = {
      http_req_failed: ['rate<0.01'],
      http_req_duration: ['p(95)<2000'],
      dropped_iterations: ['count<1'],
    };
  }
  return options;
}

// The exec functions the run will call (setup() seeds only what they need). Kept apart
// from the exported options: k6 does not show a script its own scenarios outside init.
let planned = [];

export function plannedExecs() {
  return new Set(planned);
}
