// The overview's charts: the daily series the page carries as JSON (#overview-series) drawn with uPlot,
// and drawn again each time htmx reloads the figures. Without JavaScript the tables hold the same numbers.
(function () {
  "use strict";
  var HEIGHT = 220;
  var plots = [];

  function series() {
    var data = document.getElementById("overview-series");
    return data ? JSON.parse(data.textContent) : [];
  }

  function options(s, width) {
    return {
      title: s.currency,
      width: width,
      height: HEIGHT,
      scales: { x: { time: true }, count: {}, volume: {} },
      series: [
        {},
        { label: "Approved", scale: "count", stroke: "#0b5cad", width: 2 },
        { label: "Volume (" + s.currency + ")", scale: "volume", stroke: "#1a7f37", width: 2, dash: [6, 4] }
      ],
      axes: [
        {},
        { scale: "count", label: "Approved" },
        { scale: "volume", side: 1, label: s.currency, grid: { show: false } }
      ]
    };
  }

  function widthOf(box) {
    return Math.max(box.clientWidth - 16, 240);
  }

  function draw() {
    var section = document.getElementById("charts");
    var list = document.getElementById("chart-list");
    if (!section || !list || typeof uPlot === "undefined") {
      return;
    }
    plots.forEach(function (plot) { plot.destroy(); });
    plots = [];
    list.replaceChildren();
    var all = series();
    section.hidden = all.length === 0;
    all.forEach(function (s) {
      var box = document.createElement("div");
      box.className = "chart";
      box.id = "chart-" + s.currency;
      box.setAttribute("role", "img");
      box.setAttribute("aria-label", "Approved payments and volume per day in " + s.currency +
        ", last 30 days; the table of approved per day has the same figures.");
      list.appendChild(box);
      plots.push(new uPlot(options(s, widthOf(box)), [s.days, s.count, s.volume], box));
    });
  }

  var pending = false;
  function fit() {
    if (pending) {
      return;
    }
    pending = true;
    window.requestAnimationFrame(function () {
      pending = false;
      plots.forEach(function (plot) {
        plot.setSize({ width: widthOf(plot.root.parentNode), height: HEIGHT });
      });
    });
  }

  document.addEventListener("htmx:afterSettle", function (event) {
    if (event.target && event.target.id === "figures") {
      draw();
    }
  });
  window.addEventListener("resize", fit);
  draw();
})();
