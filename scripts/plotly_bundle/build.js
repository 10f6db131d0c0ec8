// Builds plotly.pluie.min.js, the plotly.js the app's charts load, an asset of the chart component beside its
// module (components/pluie_plotly/pluie_plotly/frontend/, package.json's build names it): plotly.js's
// own esbuild settings (node_modules/plotly.js/esbuild-config.js), from entry.js's traces only, minified.
// A "custom bundle" as plotly.js's CUSTOM_BUNDLE.md describes it. Run: make plotly-bundle.
const esbuild = require('esbuild');
const { environmentPlugin } = require('esbuild-plugin-environment');
const { glsl } = require('esbuild-plugin-glsl');
const InlineCSSPlugin = require('esbuild-plugin-inline-css');
const version = require('plotly.js/package.json').version;

esbuild.build({
    entryPoints: [require('path').join(__dirname, 'entry.js')],
    outfile: process.argv[2],
    format: 'iife',
    globalName: 'Plotly',
    bundle: true,
    minify: true,
    legalComments: 'none',
    banner: {js: `/* plotly.js v${version} (bar, heatmap, scatter, scattergl) for PLUIE Lab: scripts/plotly_bundle.` +
                 ' Copyright 2012-2026, Plotly, Inc. Licensed under the MIT license. */'},
    plugins: [InlineCSSPlugin(), glsl({ minify: true }), environmentPlugin({ NODE_DEBUG: false })],
    alias: { regl: '@plotly/regl', stream: 'stream-browserify' },
    define: { global: 'window', 'define.amd': 'false' },
    target: 'es2016',
    logLevel: 'info'
}).catch(() => process.exit(1));
