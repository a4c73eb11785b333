import { defineConfig } from 'vite';

// JSX compiles to Preact calls through esbuild's automatic runtime (no
// Babel plugin needed). `npm run dev` proxies the API to a running
// oscar-server on :8080.
export default defineConfig({
  base: './',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: { outDir: 'dist', assetsDir: 'assets', sourcemap: false, chunkSizeWarningLimit: 1024 },
  server: {
    proxy: Object.fromEntries(['/v1', '/props', '/slots', '/metrics', '/health'].map((p) => [p, 'http://127.0.0.1:8080'])),
  },
  test: { include: ['test/**/*.test.{js,jsx}'], environment: 'node' },
});
