import { render } from 'preact';
import { App } from './App.jsx';
import { openStore } from './store.js';
import 'highlight.js/styles/github.css';
import './style.css';

openStore().then(
  (store) => render(<App store={store} />, document.getElementById('app')),
  (e) => {
    document.getElementById('app').textContent = `This browser cannot open IndexedDB (${e.message}); conversations need it.`;
  },
);
