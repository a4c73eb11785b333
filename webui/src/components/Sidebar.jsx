// Conversation list: new, search, open, rename, delete, export/import.
import { useRef } from 'preact/hooks';
import { PenIcon, TrashIcon } from './icons.jsx';

export function Sidebar({ conversations, currentId, query, onQuery, onNew, onOpen, onRename, onDelete, onExport, onImport }) {
  const fileRef = useRef(null);
  return (
    <nav class="sidebar" data-testid="sidebar">
      <button type="button" class="primary new-chat" data-testid="new-chat" onClick={onNew}>+ New chat</button>
      <input type="search" class="search" placeholder="Search conversations" value={query}
        data-testid="search" onInput={(e) => onQuery(e.target.value)} />
      <ul class="conv-list">
        {conversations.map((c) => (
          <li key={c.id} class={c.id === currentId ? 'conv current' : 'conv'} data-testid="conversation">
            <button type="button" class="conv-title" title={c.title} onClick={() => onOpen(c.id)}>{c.title}</button>
            <button type="button" class="icon" title="Rename" aria-label="rename" data-testid="rename"
              onClick={() => {
                const t = prompt('Rename conversation', c.title);
                if (t !== null) onRename(c.id, t);
              }}><PenIcon /></button>
            <button type="button" class="icon" title="Delete" aria-label="delete" data-testid="delete"
              onClick={() => confirm(`Delete "${c.title}"?`) && onDelete(c.id)}><TrashIcon /></button>
          </li>
        ))}
        {!conversations.length && <li class="empty">{query ? 'No match' : 'No conversations yet'}</li>}
      </ul>
      <div class="sidebar-foot">
        <button type="button" onClick={onExport} data-testid="export">Export</button>
        <button type="button" onClick={() => fileRef.current.click()} data-testid="import">Import</button>
        <input ref={fileRef} type="file" accept="application/json,.json" hidden data-testid="import-file"
          onChange={async (e) => {
            const f = e.target.files[0];
            e.target.value = '';
            if (f) onImport(await f.text());
          }} />
      </div>
    </nav>
  );
}
