// Synthetic data requests: a radar, a day and a one-hour window, spread so that requests
// differ (the ingestor's work is deterministic in them) but stay in the range it accepts.
import { config } from './config.js';

function pad(n) {
  return String(n).padStart(2, '0');
}

function pick(items) {
  return items[Math.floor(Math.random() * items.length)];
}

export function dataRequest() {
  // Days of 2021, a past year every radar covered; 28 days per month keeps dates valid.
  const month = 1 + Math.floor(Math.random() * 12);
  const day = 1 + Math.floor(Math.random() * 28);
  const hour = Math.floor(Math.random() * 23);
  return {
    radar: pick(config.radars),
    date: `2021-${pad(month)}-${pad(day)}`,
    start: `${pad(hour)}:00:00`,
    end: `${pad(hour + 1)}:00:00`,
  };
}

// A random version-4 UUID: an id no request has, for the lost visitor's dead links.
export function randomUuid() {
  const hex = '0123456789abcdef';
  let s = '';
  for (let i = 0; i < 32; i += 1) {
    let v = Math.floor(Math.random() * 16);
    if (i === 12) v = 4;
    if (i === 16) v = (v & 0x3) | 0x8; // eslint-disable-line no-bitwise
    s += hex[v];
  }
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
}
