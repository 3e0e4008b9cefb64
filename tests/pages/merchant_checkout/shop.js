/* A merchant's own checkout script, as a front-end developer writes it against docs/hosted-fields.md:
   it asks its server for a ticket, has the fields tokenize, hands the token to its server (which makes the
   v4 sale), polls its server for the status, and opens redirect-to once when 3-D Secure needs the payer. */
window.shopLog = { errors: [], violations: [], tokens: 0 };
document.addEventListener("securitypolicyviolation", function (event) {
  window.shopLog.violations.push(event.violatedDirective + " " + event.blockedURI);
});

function say(id, text) { document.getElementById(id).textContent = text; }

function poll(orderId) {
  fetch("/status?order=" + orderId).then(function (r) { return r.json(); }).then(function (found) {
    if (found.redirectTo) { location.assign(found.redirectTo); return; }
    if (found.status === "processing") { setTimeout(poll, 150, orderId); return; }
    say("result", found.status === "approved" ? "Payment approved" : "Payment " + found.status);
  });
}

window.onHostedFieldsReady = function (HostedFields) {
  var ticket = null;
  var pay = document.getElementById("pay");
  var dark = document.body.classList.contains("dark");
  var style = {
    input: { color: dark ? "#e8ecf2" : "#1c2430", fontSize: "16px", fontFamily: "system-ui, sans-serif" },
    placeholder: { color: dark ? "#7d8797" : "#8a94a3" },
    focus: { color: dark ? "#ffffff" : "#0b1a33" }
  };
  var fields = HostedFields.init({
    endpointId: document.body.dataset.endpoint,
    fields: {
      "card-number": { type: "pan", placeholder: "1234 1234 1234 1234", style: style },
      "card-expiry": { type: "exp", placeholder: "MM / YY", style: style },
      "card-cvc": { type: "cvv", placeholder: "CVC", style: style }
    },
    onReady: function () { pay.disabled = false; document.body.dataset.ready = "yes"; },
    onToken: function (token) {
      window.shopLog.tokens++;
      ticket = null;  // spent by the tokenization
      var browser = {
        customer_browser_info: "true",
        customer_browser_javascript_enabled: "true",
        customer_browser_java_enabled: "false",
        customer_browser_accept_language: navigator.language,
        customer_browser_color_depth: String(screen.colorDepth),
        customer_browser_screen_width: String(screen.width),
        customer_browser_screen_height: String(screen.height),
        customer_browser_time_zone: String(new Date().getTimezoneOffset()),
        customer_browser_user_agent: navigator.userAgent
      };
      fetch("/pay", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ token: token, name: document.getElementById("name").value, browser: browser })
      }).then(function (r) { return r.json(); }).then(function (sale) {
        if (sale.orderId) poll(sale.orderId);
        else say("message", "The sale was refused: " + sale.error);
      });
    },
    onError: function (problem) {
      window.shopLog.errors.push(problem);
      say("message", problem.payerMessage || problem.message);
      if (problem.code >= 4000 && problem.code <= 4999) {
        ticket = null;  // spent: the next try needs a new ticket
        document.body.dataset.spent = String(problem.code);
      }
      pay.disabled = false;
    }
  });
  document.getElementById("checkout").addEventListener("submit", function (event) {
    event.preventDefault();
    pay.disabled = true;
    say("message", "");
    var got = ticket ? Promise.resolve(ticket) : fetch("/ticket" + location.search, { method: "POST" })
      .then(function (r) { return r.json(); }).then(function (answer) { return answer.ticket; });
    got.then(function (found) {
      ticket = found;
      fields.tokenize(found);
    });
  });
  window.shopFields = fields;
};
