// Number formatting for the panels.

export function formatBytes(n) {
  if (!Number.isFinite(n)) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(v >= 100 ? 0 : v >= 10 ? 1 : 2)} ${units[i]}`;
}

export function formatRate(x) {
  return Number.isFinite(x) && x > 0 ? `${x.toFixed(x >= 100 ? 0 : 1)} t/s` : '–';
}

export function formatBits(x) {
  return Number.isFinite(x) && x > 0 ? x.toFixed(2) : '–';
}

export function percent(part, whole) {
  return whole > 0 ? Math.min(100, (100 * part) / whole) : 0;
}
