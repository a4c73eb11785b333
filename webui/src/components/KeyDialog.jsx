// Asked for after a 401: the key is kept in localStorage and sent as
// "Authorization: Bearer KEY".
import { useState } from 'preact/hooks';

export function KeyDialog({ message, onSave }) {
  const [key, setKey] = useState('');
  return (
    <div class="overlay">
      <form class="dialog" data-testid="key-dialog" onSubmit={(e) => { e.preventDefault(); onSave(key.trim()); }}>
        <h2>API key</h2>
        <p>This server was started with <code>--api-key</code>. {message}</p>
        <input type="password" data-testid="key-input" autoFocus placeholder="API key" value={key} onInput={(e) => setKey(e.target.value)} />
        <div class="dialog-actions">
          <button type="submit" class="primary" data-testid="key-save">Use this key</button>
        </div>
      </form>
    </div>
  );
}
