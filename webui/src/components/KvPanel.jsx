// What the engine is doing: this conversation's share of its slot, the KV
// cache as the server reports it (GET /props "kv", GET /slots "kv"), the
// speed of the last reply and the slots and queue.
import { formatBits, formatBytes, formatRate, percent } from '../format.js';

// data-raw carries the server's number behind a formatted value (the
// browser test compares it with /props and /slots).
function Row({ label, value, testid, raw }) {
  return (
    <div class="kv-row">
      <span>{label}</span>
      <span class="kv-value" data-testid={testid} data-raw={raw}>{value}</span>
    </div>
  );
}

function Bar({ part, whole, testid }) {
  return (
    <div class="bar" data-testid={testid}>
      <div class="bar-fill" style={{ width: `${percent(part, whole)}%` }} />
    </div>
  );
}

export function KvPanel({ props, slots, metrics, contextUsed, timings, error, onClose }) {
  const kv = props?.kv;
  const nCtx = props?.default_generation_settings?.n_ctx;
  const used = kv?.bytes_used ?? 0;
  const f16 = kv?.bytes_f16_equivalent ?? 0;
  return (
    <aside class="kv-panel" data-testid="kv-panel">
      <div class="panel-head">
        <h2>Engine</h2>
        <button type="button" class="icon close-panel" aria-label="close" onClick={onClose}>×</button>
      </div>
      {error && <div class="msg-error">{error}</div>}

      <section>
        <h3>This conversation</h3>
        <Row label="Context" testid="kv-context" value={`${contextUsed ?? '–'} / ${nCtx ?? '–'} tokens`} />
        <Bar part={contextUsed ?? 0} whole={nCtx ?? 0} testid="kv-context-bar" />
        <Row label="Prompt" testid="kv-prompt-speed" value={formatRate(timings?.prompt_per_second)} />
        <Row label="Generation" testid="kv-gen-speed" value={formatRate(timings?.predicted_per_second)} />
      </section>

      {kv && (
        <section>
          <h3>KV cache</h3>
          <Row label="K type" testid="kv-type-k" value={kv.type_k} />
          <Row label="V type" testid="kv-type-v" value={kv.type_v} />
          <Row label="Bits / value (K, V main tier)" testid="kv-bits-main" value={`${formatBits(kv.bits_per_value_k)}, ${formatBits(kv.bits_per_value_v)}`} />
          <Row label="Bits / value (cached now)" testid="kv-bits" value={formatBits(kv.bits_per_value)} />
          <Row label="f16 sink / recent tiers" testid="kv-tiers" value={`${kv.sink} + ${kv.recent} positions`} />
          <Row label="Rotations" testid="kv-rotations" value={kv.rotations} />
          <Row label="Used (all slots)" testid="kv-bytes-used" raw={used} value={formatBytes(used)} />
          <Row label="Same context in f16" testid="kv-bytes-f16" raw={f16} value={formatBytes(f16)} />
          <div class="compare">
            <Bar part={used} whole={f16} testid="kv-compare-bar" />
            <span class="note">{f16 > 0 ? `${(f16 / Math.max(used, 1)).toFixed(1)}× smaller than f16` : 'empty'}</span>
          </div>
          <Row label="Allocated" testid="kv-bytes-allocated" raw={kv.bytes_allocated} value={formatBytes(kv.bytes_allocated)} />
        </section>
      )}

      <section>
        <h3>Slots {metrics ? `· queue ${metrics.requests_deferred ?? 0}` : ''}</h3>
        <table class="slots" data-testid="slots">
          <thead><tr><th>#</th><th>state</th><th>cached</th><th>KV</th></tr></thead>
          <tbody>
            {(slots || []).map((s) => (
              <tr key={s.id} data-testid="slot-row">
                <td>{s.id}</td>
                <td>{s.is_processing ? 'busy' : 'idle'}</td>
                <td data-testid="slot-cached">{s.n_cached} / {s.n_ctx}</td>
                <td data-testid="slot-bytes" data-raw={s.kv?.bytes_used}>{s.kv ? formatBytes(s.kv.bytes_used) : '–'}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {!metrics && <p class="note">Queue length: start the server with <code>--metrics</code>.</p>}
      </section>
      {props && <p class="note">{props.model_alias} · {props.total_slots} slots</p>}
    </aside>
  );
}
