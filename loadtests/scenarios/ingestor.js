// ingestor: the study's ingestor benchmark (getData and getImage). Here getData is
// the whole asynchronous trip: POST the request, poll getStatus until DONE/FAILED (with
// ELVES_PLOT_DEADLINE), then fetch the plot and check it is a PNG, so its iterations last
// as long as the ingestor takes. getImage and getStatus read finished plots seeded in setup().
import { builtinScenario, elvesOptions, plannedExecs } from '../lib/options.js';
import * as gw from '../lib/gateway.js';

export { getStatusOfSeed as getStatus, getImageOfSeed as getImage } from '../lib/gateway.js';

export const options = elvesOptions(builtinScenario('ingestor'));

export function setup() {
  // Even getStatus reads finished plots here: this scenario is about the ingestor's work.
  return gw.gatewaySetup(plannedExecs(), 5, 'getStatus');
}

export function getData() {
  gw.plotRoundTrip();
}

export default getData;
