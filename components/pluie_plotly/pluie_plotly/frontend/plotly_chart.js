// A plotly figure drawn in the page (ui/charts/__init__.py's draw: the packaged st.components.v2 component
// pluie-plotly.chart, its styles not isolated, so that plotly's own stylesheet applies). plotly.js is
// plotly.pluie.min.js, a bundle of the traces the pages draw (scripts/plotly_bundle) beside this module among
// the component's assets, loaded once per tab, often before (ui.frame's preload_views). The figure is drawn
// once, and again only when it changes: a rerun of the page with the same figure keeps its zoom and its
// selection. Themed from the app's own theme (Streamlit's --st-* CSS properties: text, background, font), light
// or dark; again when the theme changes.
//
// data: the bytes of a JSON object {revision, figure (plotly's JSON), config, select (the selection modes,
// none: nothing selectable), bundle (plotly.js's file beside this module, with its version)}. A selection is sent back
// as the state "selection": {points, point_indices, box, lasso, revision}, as st.plotly_chart names them.

function loadPlotly(bundle) {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!window.__pluiePlotly) {
    window.__pluiePlotly = new Promise((resolve, reject) => {
      let script = document.getElementById('pluie-plotly');  // ui.frame.preload_views may have added it
      if (!script) {
        script = document.createElement('script');
        script.id = 'pluie-plotly';
        script.src = new URL(bundle, import.meta.url).href;  // the component's assets, where Streamlit serves it
        document.head.appendChild(script);
      }
      script.addEventListener('load', () => resolve(window.Plotly));
      script.addEventListener('error', () => { window.__pluiePlotly = null; reject(new Error('plotly.js did not load')); });
    });
  }
  return window.__pluiePlotly;
}

function channels(css) {
  const m = /rgba?\(([^)]+)\)/.exec(css) || [];
  if (m[1]) return m[1].split(',').slice(0, 3).map(Number);
  const hex = /^#([0-9a-f]{6})$/i.exec(css.trim());
  return hex ? [0, 2, 4].map((i) => parseInt(hex[1].slice(i, i + 2), 16)) : [255, 255, 255];
}

function faded(colour, alpha) {
  const [r, g, b] = channels(colour);
  return `rgba(${r}, ${g}, ${b}, ${alpha})`;
}

// the app's theme as a plotly template: its text colour and font, its background behind the plot (plotly
// writes a heatmap's empty cells in the colour that stands out of it), faint grid lines
function themeOf(element) {
  const style = getComputedStyle(element);
  const read = (name, otherwise) => style.getPropertyValue(name).trim() || otherwise;
  const text = read('--st-text-color', '#31333f');
  const background = read('--st-background-color', '#ffffff');
  const font = read('--st-font', '"Source Sans", sans-serif');
  const [r, g, b] = channels(background);
  const dark = 0.299 * r + 0.587 * g + 0.114 * b < 128;
  const axis = {gridcolor: faded(text, 0.1), linecolor: faded(text, 0.3), zerolinecolor: faded(text, 0.3),
                tickcolor: faded(text, 0.3), title: {font: {color: text}}, tickfont: {color: text}};
  return {key: [text, background, font].join('|'), layout: {
    font: {family: font, color: text}, paper_bgcolor: background, plot_bgcolor: background,
    xaxis: axis, yaxis: axis, legend: {font: {color: text}},
    hoverlabel: {bgcolor: dark ? '#262730' : '#ffffff', bordercolor: faded(text, 0.3), font: {color: text, family: font}},
    modebar: {bgcolor: 'rgba(0, 0, 0, 0)', color: faded(text, 0.45), activecolor: text},
    title: {font: {color: text}}}};
}

function themed(figure, theme) {
  const layout = {...figure.layout, template: {layout: theme.layout}};
  delete layout.width;  // the chart takes the page's width (draw's width="stretch")
  layout.autosize = true;
  return layout;
}

function selection(event, revision) {
  const points = ((event && event.points) || []).map((p) => ({
    curve_number: p.curveNumber, point_number: p.pointNumber, point_index: p.pointIndex ?? p.pointNumber,
    x: p.x, y: p.y, customdata: p.customdata}));
  const range = event && event.range, lasso = event && event.lassoPoints;
  return {points, point_indices: points.map((p) => p.point_index),
          box: range ? [{x: range.x, y: range.y}] : [], lasso: lasso ? [{x: lasso.x, y: lasso.y}] : [], revision};
}

export default function ({data, parentElement, setStateValue}) {
  const text = typeof data === 'string' ? data : new TextDecoder().decode(data);
  let chart = parentElement.__pluieChart;
  if (!chart) {
    const element = document.createElement('div');
    element.className = 'pluie-chart';
    parentElement.appendChild(element);
    chart = parentElement.__pluieChart = {element, text: null, theme: null};
  }
  const theme = themeOf(parentElement);
  const cleanup = () => {  // the element gone from the page (not merely drawn again): plotly's listeners go too
    setTimeout(() => { if (!chart.element.isConnected && window.Plotly) window.Plotly.purge(chart.element); }, 0);
  };
  if (chart.text === text && chart.theme === theme.key) return cleanup;  // the same figure: as it stands
  chart.text = text;
  chart.theme = theme.key;
  const payload = JSON.parse(text);
  chart.element.style.height = `${payload.figure.layout.height || 450}px`;
  loadPlotly(payload.bundle).then((Plotly) => {
    if (chart.text !== text) return undefined;  // a newer figure came while plotly.js loaded: it draws instead
    const first = !chart.element.classList.contains('js-plotly-plot');
    const drawn = Plotly.react(chart.element, payload.figure.data, themed(payload.figure, theme), payload.config);
    if (first) {  // a selection is sent where the page asked for one (payload.select), with the figure's revision
      const send = (event) => { if (chart.select) setStateValue('selection', selection(event, chart.revision)); };
      chart.element.on('plotly_selected', (event) => { if (event) send(event); });
      chart.element.on('plotly_deselect', () => send(null));
      let width = chart.element.clientWidth;  // drawn again only when the page's width changes (the sidebar)
      new ResizeObserver(() => {
        const now = chart.element.clientWidth;
        if (chart.element.isConnected && now > 0 && now !== width) { width = now; Plotly.Plots.resize(chart.element); }
      }).observe(chart.element);
    }
    chart.revision = payload.revision;
    chart.select = payload.select.length > 0;
    return drawn;
  }).catch((error) => {  // plotly.js did not load (the server gone, a proxy in the way): said where the chart was
    chart.text = null;  // drawn again on the page's next run
    chart.element.textContent = `This chart could not be drawn (${error.message}). Reload the page to try again.`;
  });
  return cleanup;
}
