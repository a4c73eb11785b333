// Sampling settings: the form starts from the server's defaults
// (GET /props default_generation_settings.params); only the values the user
// changed are kept (localStorage) and sent with each request.

export const FIELDS = [
  { key: 'temperature', label: 'Temperature', step: 0.05, server: 'temperature' },
  { key: 'top_k', label: 'Top-k', step: 1, server: 'top_k', integer: true },
  { key: 'top_p', label: 'Top-p', step: 0.01, server: 'top_p' },
  { key: 'min_p', label: 'Min-p', step: 0.01, server: 'min_p' },
  { key: 'max_tokens', label: 'Max tokens (-1: no limit)', step: 1, server: 'n_predict', integer: true },
  { key: 'repeat_penalty', label: 'Repeat penalty', step: 0.05, server: 'repeat_penalty' },
  { key: 'presence_penalty', label: 'Presence penalty', step: 0.05, server: 'presence_penalty' },
  { key: 'frequency_penalty', label: 'Frequency penalty', step: 0.05, server: 'frequency_penalty' },
  { key: 'seed', label: 'Seed (-1: random)', step: 1, server: 'seed', integer: true },
];

export function serverDefaults(props) {
  const p = props?.default_generation_settings?.params || {};
  const out = {};
  // The server's floats arrive widened to double (0.8 -> 0.800000011920929).
  for (const f of FIELDS) if (typeof p[f.server] === 'number') out[f.key] = Number(p[f.server].toPrecision(6));
  return out;
}

// Drops values that are not numbers or equal the server's default.
export function cleanOverrides(overrides, defaults) {
  const out = {};
  for (const f of FIELDS) {
    const v = overrides[f.key];
    if (typeof v !== 'number' || !Number.isFinite(v)) continue;
    if (defaults[f.key] === v) continue;
    out[f.key] = f.integer ? Math.trunc(v) : v;
  }
  return out;
}

// The request's sampling fields (max_tokens -1 means "no limit": omitted).
export function requestParams(overrides) {
  const out = { ...overrides };
  if (out.max_tokens !== undefined && out.max_tokens < 0) delete out.max_tokens;
  return out;
}
