/* One Hosted Fields field (CONTRACT §18), inside the merchant's checkout page, on the gateway's origin.
   It talks to its parent page (the SDK) only with the origin the SDK named, which must be the page that
   frames it, and tells it states, never values. The three fields of one checkout share a BroadcastChannel
   (their own origin only): when the page asks to tokenize, the card number field collects the other two,
   checks all three and posts the card to the gateway itself. */
(function () {
  "use strict";

  var params = new URLSearchParams(location.search);
  var part = params.get("type");
  var fieldId = params.get("id") || "";
  var channelName = params.get("channel") || "";
  var parentOrigin = params.get("origin") || "";
  var input = document.getElementById("hf-input");
  var errorText = document.getElementById("hf-error");
  var problems = JSON.parse(document.getElementById("hf-problems").textContent);
  var ancestors = location.ancestorOrigins;

  var framedByParent = window.parent !== window && /^https?:\/\/[^/?#]+$/.test(parentOrigin) &&
    /^[0-9a-f]{32}$/.test(channelName) && !(ancestors && ancestors.length && ancestors[0] !== parentOrigin);
  if (!framedByParent) {
    input.disabled = true;  // not in the page the SDK named: nothing here may reach anyone
    return;
  }

  var scheme = params.get("scheme") || "";
  if (/^[a-z ]{1,32}$/.test(scheme)) document.documentElement.style.colorScheme = scheme;

  // The gateway's own card rules and style allow-list (kassa/domain/cards.py, domain/hosted_fields.py).
  var RULES = JSON.parse(document.getElementById("hf-rules").textContent);
  var BRANDS = RULES.brands;  // longest prefix first
  var SAFE_VALUE = /^[^;{}<>\\@]{0,120}$/;
  var PART_ORDER = ["pan", "exp", "cvv"];

  var channel = new BroadcastChannel("hf-" + channelName);
  var brand = null;  // the card number field's brand, as it tells the others
  var shown = null;  // the problem shown under this field
  var baseStyle = {};
  var focusStyle = {};
  var placeholderRule = -1;
  var attempt = null;  // the page's tokenize request being answered (card number field only)

  // --- Messages -----------------------------------------------------------------------------------------

  function post(message) {
    message.channel = channelName;
    window.parent.postMessage(message, parentOrigin);
  }

  function reportState() {
    post({
      type: "state",
      focused: document.activeElement === input,
      filled: input.value !== "",
      invalid: shown !== null
    });
  }

  function reportHeight() {
    post({ type: "height", height: Math.ceil(document.body.getBoundingClientRect().height) });
  }

  window.addEventListener("message", function (event) {
    if (event.source !== window.parent || event.origin !== parentOrigin) return;
    var data = event.data;
    if (!data || data.channel !== channelName) return;
    if (data.type === "style") applyStyle(data.style || {});
    else if (data.type === "tokenize" && part === "pan") tokenize(String(data.ticket), String(data.endpointId), data.attempt);
    else if (data.type === "focus") input.focus();
  });

  channel.onmessage = function (event) {
    var data = event.data || {};
    if (data.type === "brand" && part === "cvv") {
      brand = data.brand;
      input.maxLength = Math.max.apply(null, cvvLengths());
      if (shown !== null) check(true);
    } else if (data.type === "collect" && part !== "pan") {
      var code = check(true);
      channel.postMessage({ type: "value", request: data.request, part: part, id: fieldId, value: input.value, code: code });
    } else if (data.type === "show" && data.part === part) {
      show(data.code);
    }
  };

  // --- Styles (the allow-list, again: the page's script is not trusted to have applied it) --------------

  function allowed(style) {
    var clean = {};
    if (!style || typeof style !== "object") return clean;
    RULES.styleProperties.forEach(function (name) {
      var value = style[name];
      if (typeof value === "number") value = String(value);
      if (typeof value === "string" && SAFE_VALUE.test(value) && !/url\s*\(/i.test(value)) clean[name] = value;
    });
    return clean;
  }

  function kebab(name) {
    return name.replace(/[A-Z]/g, function (letter) { return "-" + letter.toLowerCase(); });
  }

  function setAll(style, on) {
    Object.keys(style).forEach(function (name) { on.style.setProperty(kebab(name), style[name]); });
  }

  function applyStyle(bag) {
    baseStyle = allowed(bag.input);
    focusStyle = allowed(bag.focus);
    input.removeAttribute("style");
    setAll(baseStyle, input);
    if (baseStyle.fontFamily) document.body.style.setProperty("font-family", baseStyle.fontFamily);
    if (document.activeElement === input) setAll(focusStyle, input);
    var sheet = document.styleSheets[0];
    if (placeholderRule >= 0) sheet.deleteRule(placeholderRule);
    var placeholder = allowed(bag.placeholder);
    var declarations = Object.keys(placeholder).map(function (name) { return kebab(name) + ":" + placeholder[name]; });
    placeholderRule = sheet.insertRule("input::placeholder{" + declarations.join(";") + "}", sheet.cssRules.length);
    reportHeight();
  }

  // --- Checks -------------------------------------------------------------------------------------------

  function digits(text) { return text.replace(/\D/g, ""); }

  function brandOf(number) {
    for (var i = 0; i < BRANDS.length; i++) {
      var rule = BRANDS[i];
      if (number.length >= rule[0]) {
        var prefix = Number(number.slice(0, rule[0]));
        if (prefix >= rule[1] && prefix <= rule[2]) return rule[3];
      }
    }
    return null;
  }

  function luhn(number) {
    var sum = 0;
    for (var i = 0; i < number.length; i++) {
      var digit = Number(number[number.length - 1 - i]);
      if (i % 2 === 1) digit = digit * 2 > 9 ? digit * 2 - 9 : digit * 2;
      sum += digit;
    }
    return sum % 10 === 0;
  }

  function cvvLengths() {
    return brand ? RULES.cvvLengths[brand] : RULES.cvvLengthsUnknown;
  }

  function panProblem(number) {
    if (number === "") return 2001;
    var lengths = RULES.panLengths[brandOf(number)];
    var range = RULES.panRange;
    var lengthOk = lengths ? lengths.indexOf(number.length) >= 0 : number.length >= range[0] && number.length <= range[1];
    return lengthOk && luhn(number) ? null : 2002;
  }

  function expProblem(text) {
    if (text === "") return 2101;
    var found = /^(\d{2}) ?\/ ?(\d{2})$/.exec(text);
    if (!found || Number(found[1]) < 1 || Number(found[1]) > 12) return 2102;
    var now = new Date();
    var year = 2000 + Number(found[2]);
    var month = Number(found[1]);
    if (year < now.getFullYear() || (year === now.getFullYear() && month < now.getMonth() + 1)) return 2103;
    if (year > now.getFullYear() + RULES.maxYearsAhead) return 2104;
    return null;
  }

  function cvvProblem(text) {
    if (text === "") return 2201;
    return /^\d+$/.test(text) && cvvLengths().indexOf(text.length) >= 0 ? null : 2202;
  }

  function problemOf() {
    if (part === "pan") return panProblem(digits(input.value));
    if (part === "exp") return expProblem(input.value);
    return cvvProblem(input.value);
  }

  /* Checks the field; shows the problem when ``always`` or when the payer has finished typing. */
  function check(always) {
    var code = problemOf();
    if (code === null) show(null);
    else if (always) show(code);
    return code;
  }

  function show(code) {
    shown = code;
    input.setAttribute("aria-invalid", code === null ? "false" : "true");
    errorText.textContent = code === null ? "" : problems[code].payerMessage;
    reportState();
    reportHeight();
  }

  // --- Typing -------------------------------------------------------------------------------------------

  function groupsOf(number) {
    var kind = brandOf(number);
    if (kind === "AMEX") return [4, 6, 5];
    if (kind === "DINERS" && number.length === 14) return [4, 6, 4];
    return [4, 4, 4, 4, 3];
  }

  function formatPan(number) {
    var groups = groupsOf(number);
    var out = [];
    var at = 0;
    for (var i = 0; i < groups.length && at < number.length; i++) {
      out.push(number.slice(at, at + groups[i]));
      at += groups[i];
    }
    return out.join(" ");
  }

  function formatExp(text, deleting) {
    var found = digits(text).slice(0, 4);
    if (found.length === 1 && Number(found) > 1) found = "0" + found;
    if (found.length > 2 || (found.length === 2 && !deleting)) return found.slice(0, 2) + " / " + found.slice(2);
    return found;
  }

  /* Rewrites the value in its display form, keeping the caret after the same number of digits. */
  function reformat(event) {
    var before = input.value;
    var caret = input.selectionStart === null ? before.length : input.selectionStart;
    var digitsBefore = digits(before.slice(0, caret)).length;
    var deleting = event && event.inputType && event.inputType.indexOf("delete") === 0;
    var after;
    if (part === "pan") after = formatPan(digits(before).slice(0, RULES.panRange[1]));
    else if (part === "exp") after = formatExp(before, deleting);
    else after = digits(before).slice(0, input.maxLength > 0 ? input.maxLength : 4);
    if (after === before) return;
    input.value = after;
    var position = 0;
    var seen = 0;
    while (position < after.length && seen < digitsBefore) {
      if (/\d/.test(after[position])) seen++;
      position++;
    }
    if (caret === before.length) position = after.length;
    input.setSelectionRange(position, position);
  }

  function complete() {
    var value = digits(input.value);
    if (part === "pan") {
      var lengths = RULES.panLengths[brandOf(value)] || [16, RULES.panRange[1]];
      return value.length >= lengths[lengths.length - 1];
    }
    if (part === "exp") return value.length === 4;
    return value.length === cvvLengths()[0];
  }

  input.addEventListener("input", function (event) {
    reformat(event);
    if (part === "pan") {
      var found = brandOf(digits(input.value));
      if (found !== brand) {
        brand = found;
        channel.postMessage({ type: "brand", brand: brand });
      }
    }
    check(shown !== null || complete());
    reportState();
  });
  input.addEventListener("focus", function () {
    setAll(focusStyle, input);
    reportState();
  });
  input.addEventListener("blur", function () {
    input.removeAttribute("style");
    setAll(baseStyle, input);
    check(input.value !== "");
    reportState();
  });
  if (part === "cvv") input.maxLength = 4;
  if (part === "exp") input.maxLength = 7;
  if (part === "pan") input.maxLength = 23;

  // --- Tokenization (the card number field) --------------------------------------------------------------

  function fail(code, fieldOfProblem, problem) {
    var found = problem || problems[code];
    post({
      type: "error",
      attempt: attempt,
      problem: { code: found.code, message: found.message, payerMessage: found.payerMessage, field: fieldOfProblem }
    });
  }

  function collect(onCollected) {
    var request = Math.random().toString(16).slice(2);
    var values = { pan: { part: "pan", id: fieldId, value: digits(input.value), code: check(true) } };
    var timer = setTimeout(function () {
      channel.removeEventListener("message", listen);
      onCollected(null);
    }, 3000);
    function listen(event) {
      var data = event.data || {};
      if (data.type !== "value" || data.request !== request) return;
      values[data.part] = data;
      if (values.exp && values.cvv) {
        clearTimeout(timer);
        channel.removeEventListener("message", listen);
        onCollected(values);
      }
    }
    channel.addEventListener("message", listen);
    channel.postMessage({ type: "collect", request: request });
  }

  function tokenize(ticket, endpointId, requested) {
    attempt = requested;
    collect(function (values) {
      if (values === null) return fail(3004, null);
      for (var i = 0; i < PART_ORDER.length; i++) {
        var found = values[PART_ORDER[i]];
        if (found.code !== null) return fail(found.code, found.id);
      }
      send(ticket, endpointId, values);
    });
  }

  function send(ticket, endpointId, values) {
    var body = JSON.stringify({
      ticket: ticket, endpointId: endpointId, pan: values.pan.value, exp: values.exp.value, cvv: values.cvv.value
    });
    fetch("tokenize", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: body, credentials: "omit",
      cache: "no-store", referrerPolicy: "no-referrer"
    }).then(function (response) {
      return response.json().then(function (answer) {
        if (response.ok && answer.token) return post({ type: "token", attempt: attempt, token: answer.token });
        if (!answer.code) return fail(3002, null);
        var at = answer.field ? values[answer.field] : null;
        if (at) {
          if (at.part === "pan") show(answer.code);
          else channel.postMessage({ type: "show", part: at.part, code: answer.code });
        }
        fail(answer.code, at ? at.id : null, answer);
      }, function () { fail(3002, null); });
    }, function () { fail(3001, null); });
  }

  post({ type: "ready", label: document.title });
  reportHeight();
  if (window.ResizeObserver) new ResizeObserver(reportHeight).observe(document.body);
})();
