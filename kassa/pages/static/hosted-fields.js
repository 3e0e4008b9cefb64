/* Kassa Hosted Fields SDK (CONTRACT §18; docs/hosted-fields.md). Load it from the gateway with
   <script async src="https://GATEWAY/paynet/hosted-fields/v1/hosted-fields.js"></script>; it calls
   window.onHostedFieldsReady(HostedFields) once loaded. The card fields are iframes on the gateway's origin:
   this script only places them, relays styles and states, and asks them to tokenize. No card data ever
   reaches this page. No build step, no dependencies. */
(function () {
  "use strict";

  var script = document.currentScript;
  if (!script || !script.src) return;
  var base = script.src.replace(/[?#].*$/, "").replace(/[^/]*$/, "");
  var gatewayOrigin = new URL(base).origin;

  var TYPES = { pan: true, exp: true, cvv: true };
  var STYLE_BAGS = ["input", "placeholder", "focus"];
  var STYLE_PROPERTIES = [
    "color", "backgroundColor", "caretColor", "fontFamily", "fontSize", "fontStyle", "fontVariant", "fontWeight",
    "letterSpacing", "lineHeight", "padding", "paddingTop", "paddingRight", "paddingBottom", "paddingLeft",
    "textAlign"
  ];
  var SAFE_VALUE = /^[^;{}<>\\@]{0,120}$/;
  var ANSWER_WAIT_MS = 60000;

  function problem(code, message, payerMessage, field) {
    return { code: code, message: message, payerMessage: payerMessage || "", field: field || null };
  }

  function later(callback, value) {
    setTimeout(function () { callback(value); }, 0);
  }

  /* The style bag without what the allow-list refuses; each refusal is named on the console. */
  function allowedStyle(style) {
    var clean = {};
    if (!style || typeof style !== "object") return clean;
    Object.keys(style).forEach(function (bag) {
      if (STYLE_BAGS.indexOf(bag) < 0) return console.warn("HostedFields: style bag " + bag + " is ignored");
      clean[bag] = {};
      Object.keys(style[bag] || {}).forEach(function (name) {
        var value = style[bag][name];
        if (typeof value === "number") value = String(value);
        var safe = typeof value === "string" && SAFE_VALUE.test(value) && !/url\s*\(/i.test(value);
        if (STYLE_PROPERTIES.indexOf(name) >= 0 && safe) clean[bag][name] = value;
        else console.warn("HostedFields: style " + bag + "." + name + " is not allowed and is ignored");
      });
    });
    return clean;
  }

  function randomChannel() {
    var bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) { return (b < 16 ? "0" : "") + b.toString(16); }).join("");
  }

  function configProblem(options) {
    if (!options || typeof options !== "object") return "init needs an options object";
    if (!/^[0-9]+$/.test(String(options.endpointId))) return "endpointId must be the endpoint's id";
    if (!options.fields || typeof options.fields !== "object") return "fields must map container ids to fields";
    var types = {};
    var ids = Object.keys(options.fields);
    for (var i = 0; i < ids.length; i++) {
      var spec = options.fields[ids[i]] || {};
      if (!TYPES[spec.type]) return "fields." + ids[i] + ".type must be pan, exp or cvv";
      if (types[spec.type]) return "more than one field of type " + spec.type;
      types[spec.type] = true;
      var container = document.getElementById(ids[i]);
      if (!container) return "no element with id " + ids[i];
      if (container.firstChild) return "the element " + ids[i] + " must be empty";
    }
    if (!types.pan || !types.exp || !types.cvv) return "fields must have one field of each type: pan, exp, cvv";
    return null;
  }

  /* An instance that reports ``refusal`` to every call: what init returns when it cannot run. */
  function inert(refusal, onError) {
    later(onError, refusal);
    return {
      tokenize: function () { later(onError, refusal); },
      setStyle: function () {},
      destroy: function () {}
    };
  }

  function init(options) {
    var onError = options && typeof options.onError === "function" ? options.onError : function (found) {
      console.error("HostedFields: " + found.message);
    };
    if (gatewayOrigin === location.origin) {
      var message = "Hosted Fields refuse to run from this page's own origin: load hosted-fields.js from the " +
        "gateway, so that the card fields stay out of this page's reach";
      console.error("HostedFields: " + message);
      return inert(problem(1002, message), onError);
    }
    var wrong = configProblem(options);
    if (wrong !== null) {
      console.error("HostedFields: " + wrong);
      return inert(problem(1001, wrong), onError);
    }
    return new Instance(options, onError);
  }

  function Instance(options, onError) {
    var self = this;
    var channel = randomChannel();
    var fields = [];
    var readyCalled = false;
    var pending = null;  // the tokenize call waiting for its answer
    var attempts = 0;
    var destroyed = false;

    function fieldOf(source) {
      for (var i = 0; i < fields.length; i++) if (fields[i].iframe.contentWindow === source) return fields[i];
      return null;
    }

    function send(field, message) {
      message.channel = channel;
      field.iframe.contentWindow.postMessage(message, gatewayOrigin);
    }

    function settle(attempt, callback, value) {
      if (pending === null || pending.attempt !== attempt) return;  // late: its caller was answered
      clearTimeout(pending.timer);
      pending = null;
      if (typeof callback === "function") callback(value);
    }

    function toggle(field, state) {
      var classes = field.container.classList;
      classes.toggle("hf-field--focus", !!state.focused);
      classes.toggle("hf-field--filled", !!state.filled);
      classes.toggle("hf-field--error", !!state.invalid);
    }

    function onMessage(event) {
      if (event.origin !== gatewayOrigin) return;
      var field = fieldOf(event.source);
      var data = event.data;
      if (field === null || !data || data.channel !== channel) return;
      if (data.type === "ready") {
        field.ready = true;
        if (typeof data.label === "string") field.iframe.title = data.label.slice(0, 100);
        send(field, { type: "style", style: field.style });
        if (!readyCalled && fields.every(function (f) { return f.ready; })) {
          readyCalled = true;
          if (typeof options.onReady === "function") options.onReady();
        }
      } else if (data.type === "height") {
        field.iframe.style.height = Math.max(16, Math.min(400, Number(data.height) || 0)) + "px";
      } else if (data.type === "state") {
        toggle(field, data);
      } else if (data.type === "token" && field.type === "pan" && typeof data.token === "string") {
        settle(data.attempt, options.onToken, data.token);
      } else if (data.type === "error" && field.type === "pan" && data.problem) {
        var found = data.problem;
        settle(data.attempt, onError, problem(Number(found.code), String(found.message),
          String(found.payerMessage || ""), found.field));
      }
    }

    Object.keys(options.fields).forEach(function (id) {
      var spec = options.fields[id];
      var container = document.getElementById(id);
      var iframe = document.createElement("iframe");
      var query = new URLSearchParams({
        type: spec.type,
        id: id,
        channel: channel,
        origin: location.origin,
        label: spec.label || "",
        placeholder: spec.placeholder || "",
        scheme: getComputedStyle(container).colorScheme || "normal"
      });
      iframe.src = base + "field?" + query.toString();
      iframe.title = spec.label || "Card field";  // until the field names itself (ready)
      iframe.setAttribute("frameborder", "0");
      iframe.setAttribute("scrolling", "no");
      iframe.setAttribute("allow", "");
      iframe.style.border = "0";
      iframe.style.width = "100%";
      iframe.style.height = "1.5em";
      iframe.style.display = "block";
      iframe.style.colorScheme = query.get("scheme");
      container.classList.add("hf-field");
      container.appendChild(iframe);
      fields.push({
        id: id, type: spec.type, container: container, iframe: iframe, ready: false, style: allowedStyle(spec.style)
      });
    });
    window.addEventListener("message", onMessage);

    self.tokenize = function (ephemeralTicket) {
      if (destroyed) return later(onError, problem(1004, "this instance was destroyed"));
      if (!fields.every(function (f) { return f.ready; })) {
        return later(onError, problem(1003, "the fields are not ready yet: wait for onReady"));
      }
      if (pending !== null) {
        return later(onError, problem(3003, "a tokenization is already running", "Please wait a moment."));
      }
      if (typeof ephemeralTicket !== "string" || ephemeralTicket === "") {
        return later(onError, problem(1001, "tokenize needs the ephemeral ticket your server got"));
      }
      var attempt = ++attempts;
      var timer = setTimeout(function () {
        settle(attempt, onError, problem(3001, "the gateway did not answer in time; tokenize again with the same " +
          "ticket", "We could not reach the payment service. Please try again."));
      }, ANSWER_WAIT_MS);
      pending = { attempt: attempt, timer: timer };
      var leader = fields.filter(function (f) { return f.type === "pan"; })[0];
      send(leader, { type: "tokenize", ticket: ephemeralTicket, endpointId: String(options.endpointId), attempt: attempt });
    };

    self.setStyle = function (id, style) {
      var field = fields.filter(function (f) { return f.id === id; })[0];
      if (!field) return console.warn("HostedFields: setStyle: no field " + id);
      field.style = allowedStyle(style);
      if (field.ready) send(field, { type: "style", style: field.style });
    };

    self.destroy = function () {
      if (destroyed) return;
      destroyed = true;
      window.removeEventListener("message", onMessage);
      if (pending !== null) clearTimeout(pending.timer);
      pending = null;
      fields.forEach(function (f) {
        f.iframe.remove();
        f.container.classList.remove("hf-field", "hf-field--focus", "hf-field--filled", "hf-field--error");
      });
      fields = [];
    };
  }

  var HostedFields = { version: "1", init: init };
  window.HostedFields = HostedFields;
  if (typeof window.onHostedFieldsReady === "function") window.onHostedFieldsReady(HostedFields);
})();
