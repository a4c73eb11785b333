import { describe, expect, it } from 'vitest';
import { applyChunk, applyEventData, contextUsed, emptyReply } from '../src/chat_stream.js';

const delta = (d, finish = null) => ({ choices: [{ index: 0, delta: d, finish_reason: finish }] });

describe('applyChunk', () => {
  it('appends reasoning and content separately and keeps the final timings and usage', () => {
    const r = emptyReply();
    applyChunk(r, delta({ role: 'assistant', content: '' }));
    applyChunk(r, delta({ reasoning_content: 'Let me ' }));
    applyChunk(r, delta({ reasoning_content: 'think.' }));
    applyChunk(r, delta({ content: 'Hello' }));
    applyChunk(r, delta({ content: ', world' }));
    applyChunk(r, { ...delta({}, 'length'), timings: { prompt_n: 5, cache_n: 2, predicted_n: 7, predicted_per_second: 30 } });
    expect(r.reasoning).toBe('Let me think.');
    expect(r.content).toBe('Hello, world');
    expect(r.finishReason).toBe('length');
    expect(contextUsed(r)).toBe(14); // from timings: 2 + 5 + 7
    applyChunk(r, { choices: [], usage: { prompt_tokens: 7, completion_tokens: 7, total_tokens: 14 } });
    expect(r.usage.total_tokens).toBe(14);
    expect(contextUsed(r)).toBe(14);
  });

  it('assembles tool calls streamed in pieces by index', () => {
    const r = emptyReply();
    applyChunk(r, delta({ tool_calls: [{ index: 0, id: 'c0', type: 'function', function: { name: 'get_weather', arguments: '{"city":' } }] }));
    applyChunk(r, delta({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }));
    applyChunk(r, delta({ tool_calls: [{ index: 1, id: 'c1', function: { name: 'now', arguments: '{}' } }] }, 'tool_calls'));
    expect(r.toolCalls).toEqual([
      { id: 'c0', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
      { id: 'c1', type: 'function', function: { name: 'now', arguments: '{}' } },
    ]);
    expect(r.finishReason).toBe('tool_calls');
  });

  it('throws the server error carried in the stream', () => {
    expect(() => applyChunk(emptyReply(), { error: { code: 400, message: 'context full', type: 'exceed_context_size_error' } }))
      .toThrow('context full');
  });

  it('stops at [DONE] and rejects malformed JSON', () => {
    const r = emptyReply();
    expect(applyEventData(r, '[DONE]')).toBe(false);
    expect(applyEventData(r, JSON.stringify(delta({ content: 'x' })))).toBe(true);
    expect(r.content).toBe('x');
    expect(() => applyEventData(r, '{"choices": [')).toThrow();
  });

  it('has no context figure before the server reports one', () => {
    expect(contextUsed(emptyReply())).toBeNull();
  });
});
