'use strict';
// Decode the embedded data, draw, and say when done: body[data-ready] and PM.renderMs (ms
// since navigation began) are what the tests and bench/report_bench read.
(async function () {
  const main = document.getElementById('main');
  try {
    PM.timings = { start: performance.now() };
    const data = await PM.decode(document.getElementById('pm-data').textContent);
    PM.timings.decoded = performance.now();
    PM.data = data;
    window.pmReport = PM;
    main.textContent = '';
    PM.setup();
    if (data.kind === 'compare') PM.renderCompare(data, main); else PM.renderReport(data, main);
    PM.timings.built = performance.now();
    await new Promise(resolve => requestAnimationFrame(() => setTimeout(resolve, 0)));
    PM.renderMs = performance.now();
    document.body.dataset.ready = 'yes';
  } catch (e) {
    main.textContent = 'This page could not be drawn: ' + e;
    document.body.dataset.ready = 'error';
    throw e;
  }
})();
