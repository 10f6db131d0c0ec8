// plotly.js's core (the scatter trace, shapes, annotations, the modebar, selections) and the traces
// ui/charts/__init__.py draws: bar, heatmap, scattergl. ui/charts/__init__.py's BUNDLED_TRACES names the same;
// a test checks that every figure the pages draw uses no other.
var Plotly = require('plotly.js/lib/core');

Plotly.register([
    require('plotly.js/lib/bar'),
    require('plotly.js/lib/heatmap'),
    require('plotly.js/lib/scattergl')
]);

module.exports = Plotly;
