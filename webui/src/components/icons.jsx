// Inline SVG icons: emoji and dingbats depend on the fonts a machine has
// (a bare Debian chromium shows boxes for most of them).
const svg = (d) => (props) => (
  <svg width="16" height="16" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2"
    stroke-linecap="round" stroke-linejoin="round" aria-hidden="true" {...props}>
    <path d={d} />
  </svg>
);

export const ClipIcon = svg('M21 11.5l-8.5 8.5a5 5 0 0 1-7-7L14 4.5a3.5 3.5 0 0 1 5 5L10.5 18a2 2 0 0 1-3-3L15 7.5');
export const TrashIcon = svg('M4 7h16M10 11v6M14 11v6M6 7l1 13h10l1-13M9 7V4h6v3');
export const PenIcon = svg('M4 20h4L19 9l-4-4L4 16v4zM14 6l4 4');
export const FileIcon = svg('M14 3H6v18h12V7l-4-4zM14 3v4h4');
export const ToolIcon = svg('M14.7 6.3a4 4 0 0 0-5.4 5.4L3 18l3 3 6.3-6.3a4 4 0 0 0 5.4-5.4l-2.5 2.5-2.5-.5-.5-2.5z');
