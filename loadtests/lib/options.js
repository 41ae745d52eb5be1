// The k6 options of every Elves script: the engine's scenarios (JSON in ELVES_K6_SCENARIOS)
// or, standalone, a small open-model run of the script's default mix.
import { config } from './config.js';
import { FACTS } from './scenario-facts.js';

// Tags that become Prometheus labels. `url` is left out on purpose: request ids in paths
// would make one series per request. Requests carry `name` (the path template) instead.
// `error` (the message) is left out too: it can quote the URL; `error_code` says enough.
export const SYSTEM_TAGS = Object.freeze([
  'status', 'method', 'name', 'group', 'check', 'error_code', 'scenario', 'expected_response',
]);

// A built-in scenario's facts (elves.engine.models.scenarios, generated into scenario-facts.js):
// {execs, defaultMix, iterationSeconds: exec -> seconds}.
export function builtinScenario(name) {
  const scenario = FACTS.scenarios[name];
  if (scenario === undefined) {
    throw new Error(`${name} is not a built-in scenario; they are: ${Object.keys(FACTS.scenarios).join(', ')}`);
  }
  return scenario;
}

// Python's round(): half to even, so a rate lands where the engine puts it.
function roundHalfEven(x) {
  const floor = Math.floor(x);
  const rest = x - floor;
  if (rest !== 0.5) return Math.round(x);
  return floor % 2 === 0 ? floor : floor + 1;
}

// The engine's VU sizing (elves.engine.models.scenarios: time_unit, vus_for) from the same facts.
function timeUnit(perSecond) {
  const { timeUnits, minRatePerUnit } = FACTS.vuSizing;
  return timeUnits.find(([, seconds]) => perSecond * seconds >= minRatePerUnit) || timeUnits[timeUnits.length - 1];
}

function vusFor(perSecond, iterationSeconds) {
  const sizing = FACTS.vuSizing;
  const inFlight = perSecond * (iterationSeconds + sizing.stallAllowanceSeconds);
  const pre = Math.max(sizing.minPreAllocatedVUs, Math.ceil(inFlight * sizing.headroom));
  return [pre, Math.max(pre * sizing.maxVUsFactor, pre + sizing.maxVUsAbove)];
}

// One scenario per exec of the mix, sharing `ratePerMinute` by weight: what the engine plans
// for a flat open-model rate (elves.engine.planning.plan.k6_scenarios), so a standalone `k6 run`
// exercises what a LoadTest would.
export function defaultScenarios(mix, ratePerMinute, duration, iterationSeconds) {
  const weights = Object.entries(mix).filter(([, weight]) => weight > 0);
  const total = weights.reduce((sum, [, weight]) => sum + weight, 0);
  const perSecond = ratePerMinute / 60;
  const scenarios = {};
  for (const [exec, weight] of weights) {
    const share = weight / total;
    const [unit, unitSeconds] = timeUnit(perSecond * share);
    const seconds = exec in iterationSeconds ? iterationSeconds[exec] : FACTS.customIterationSeconds;
    const [preAllocatedVUs, maxVUs] = vusFor(perSecond * share, seconds);
    scenarios[exec] = {
      executor: FACTS.vuSizing.flatRateExecutor,
      exec,
      rate: roundHalfEven(perSecond * share * unitSeconds),
      timeUnit: unit,
      duration,
      preAllocatedVUs,
      maxVUs,
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

// script: a builtinScenario(name), or the same shape: {defaultMix: exec name -> weight for a
// standalone run, execs: every exec function the script exports (to name a wrong exec in
// ELVES_K6_SCENARIOS before k6 does, vaguely), iterationSeconds: exec name -> how long one
// iteration takes on a healthy system}.
export function elvesOptions(script) {
  const { defaultMix, execs, iterationSeconds = {} } = script;
  const scenarios = config.scenariosJson !== ''
    ? parseScenarios(config.scenariosJson, execs)
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
