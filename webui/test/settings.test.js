import { describe, expect, it } from 'vitest';
import { cleanOverrides, requestParams, serverDefaults } from '../src/settings.js';
import { parseMetrics } from '../src/api.js';

describe('settings', () => {
  const props = { default_generation_settings: { n_ctx: 1024, params: { temperature: 0.800000011920929, top_k: 40, n_predict: -1, seed: -1 } } };
  it('takes defaults from /props and keeps only changed values', () => {
    const d = serverDefaults(props);
    expect(d).toEqual({ temperature: 0.8, top_k: 40, max_tokens: -1, seed: -1 });
    expect(cleanOverrides({ temperature: 0.8, top_k: 12.7, top_p: NaN, max_tokens: 16 }, d)).toEqual({ top_k: 12, max_tokens: 16 });
  });
  it('omits max_tokens -1 (no limit) from requests', () => {
    expect(requestParams({ max_tokens: -1, temperature: 0 })).toEqual({ temperature: 0 });
    expect(requestParams({ max_tokens: 8 })).toEqual({ max_tokens: 8 });
  });
  it('parses the llamacpp gauges of /metrics', () => {
    const m = parseMetrics('# HELP x\n# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred 3\nllamacpp:requests_processing 1\nother 5\n');
    expect(m).toEqual({ requests_deferred: 3, requests_processing: 1 });
  });
});
