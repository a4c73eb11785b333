// System prompt of the open conversation and the sampling settings (blank
// or equal to the server's default: the server decides).
import { useState } from 'preact/hooks';
import { FIELDS, cleanOverrides } from '../settings.js';

export function SettingsDialog({ system, overrides, defaults, onSave, onClose }) {
  const [sys, setSys] = useState(system);
  const [vals, setVals] = useState({ ...defaults, ...overrides });
  return (
    <div class="overlay" onClick={(e) => e.target === e.currentTarget && onClose()}>
      <form class="dialog settings" data-testid="settings-dialog" noValidate
        onSubmit={(e) => { e.preventDefault(); onSave(sys, cleanOverrides(vals, defaults)); }}>
        <h2>Settings</h2>
        <label class="wide">System prompt (this conversation)
          <textarea rows={3} data-testid="system-prompt" value={sys} onInput={(e) => setSys(e.target.value)} />
        </label>
        <div class="grid">
          {FIELDS.map((f) => (
            <label key={f.key}>{f.label}
              <input type="number" step="any" data-testid={`set-${f.key}`} value={vals[f.key] ?? ''}
                placeholder={defaults[f.key] !== undefined ? String(defaults[f.key]) : 'server default'}
                onInput={(e) => setVals({ ...vals, [f.key]: e.target.value === '' ? undefined : Number(e.target.value) })} />
            </label>
          ))}
        </div>
        <p class="note">Defaults come from the server (<code>GET /props</code>).</p>
        <div class="dialog-actions">
          <button type="button" onClick={() => setVals({ ...defaults })}>Server defaults</button>
          <button type="button" onClick={onClose}>Cancel</button>
          <button type="submit" class="primary" data-testid="settings-save">Save</button>
        </div>
      </form>
    </div>
  );
}
