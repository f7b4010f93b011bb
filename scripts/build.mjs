// Bundles src/cli.ts into dist/ with esbuild. One bundle loads far faster than hundreds of small modules
// (start-up is most of what `ls` and `plan --on` cost). Docker and ssh stay external and load lazily.
import {build} from 'esbuild'
import {readFileSync, rmSync, writeFileSync} from 'node:fs'

rmSync('dist', {recursive: true, force: true})
const {version} = JSON.parse(readFileSync('package.json', 'utf8'))
const common = {
  outdir: 'dist',
  bundle: true,
  // lazy imports (Docker, ssh, the YAML loader for user catalogs, nvidia-smi) stay lazy
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: 'linked',
  minify: true,
  keepNames: true,
  external: ['typescript', 'dockerode', 'ssh2', 'cpu-features', 'proper-lockfile'],
  // oclif and its CommonJS dependencies call require(); give the ESM bundle one.
  banner: {js: "import {createRequire as __cr} from 'node:module'; const require = __cr(import.meta.url);"},
  logLevel: 'warning',
}
await build({
  ...common,
  entryPoints: {
    cli: 'src/cli.ts',
    'command-not-found': 'src/shell/command-not-found.ts',
    'compile-catalog': 'src/catalog/compile-catalog.ts',
    // bin/run.js starts `up`'s first nvidia-smi -L from here before loading oclif; up picks up the same promise
    'first-listing': 'src/client/first-listing.ts',
    // on a shared box, bin/run.js asks here how this process stands (src/system/engine-route.ts)
    'engine-route': 'src/system/engine-route.ts',
    // a member's up starts the engine from here before oclif loads; askEngine takes it (src/system/engine-client.ts)
    'engine-client': 'src/system/engine-client.ts',
    // the shared box's root engine: one typed request on stdin, no command parser (src/engine/serve-engine.ts)
    engine: 'src/engine/serve-engine.ts',
    // npm run fidelity: the measured-figures tables (scripts/fidelity.mjs)
    fidelity: 'src/render/render-fidelity.ts',
  },
  define: {GPU_COSPLAY_VERSION: JSON.stringify(version)},
})

// ls, info and plan --on without oclif: the same command classes on a small stand-in (oclif-lite.ts).
await build({
  ...common,
  entryPoints: {fast: 'src/fast.ts'},
  alias: {'@oclif/core': './src/shell/oclif-lite.ts'},
  // oclif reads the version from package.json at start-up; the stand-in gets it written in
  define: {GPU_COSPLAY_VERSION: JSON.stringify(version)},
})

// Validate the built-in catalog once, here, so that commands can read it as plain JSON.
const {compileCatalog} = await import(new URL('../dist/compile-catalog.js', import.meta.url).href)
writeFileSync('dist/catalog.json', JSON.stringify(compileCatalog('catalog')))
