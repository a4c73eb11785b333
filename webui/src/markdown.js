// Markdown -> sanitised HTML: marked renders, highlight.js colours code
// blocks (each gets a copy button), DOMPurify strips anything a model could
// use to run script in the page.
import { Marked } from 'marked';
import hljs from 'highlight.js/lib/common';
import DOMPurify from 'dompurify';

function escapeHtml(s) {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

const marked = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    code({ text, lang }) {
      const language = (lang || '').split(/\s/)[0];
      let html;
      try {
        html = language && hljs.getLanguage(language)
          ? hljs.highlight(text, { language, ignoreIllegals: true }).value
          : hljs.highlightAuto(text).value;
      } catch {
        html = escapeHtml(text);
      }
      return (
        `<div class="code-block"><div class="code-head"><span>${escapeHtml(language || 'code')}</span>` +
        `<button type="button" class="copy-code">Copy</button></div>` +
        `<pre><code class="hljs">${html}</code></pre></div>`
      );
    },
  },
});

export function renderMarkdown(text) {
  const html = marked.parse(text || '', { async: false });
  return DOMPurify.sanitize(html, { ADD_ATTR: ['target'] });
}

// Copies text; the Clipboard API needs a secure context (not plain http on a
// LAN address), so there is a textarea fallback.
export async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const ta = document.createElement('textarea');
  ta.value = text;
  ta.style.position = 'fixed';
  ta.style.opacity = '0';
  document.body.appendChild(ta);
  ta.select();
  document.execCommand('copy');
  ta.remove();
}
