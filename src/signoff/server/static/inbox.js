// signoff inbox: live updates over SSE, expiry countdowns, and the full-mode confirmation.
// Plain JavaScript, no build step. The page works without it (forms post and redirect).
(function () {
  "use strict";
  var body = document.body;
  var live = body.getAttribute("data-live");
  var requestId = body.getAttribute("data-request-id");
  var threadId = body.getAttribute("data-thread-id");
  var after = body.getAttribute("data-after");  // the audit index the page was rendered at
  var statusEl = document.getElementById("live-status");

  function human(seconds) {
    if (seconds < 60) return Math.floor(seconds) + "s";
    if (seconds < 3600) return Math.floor(seconds / 60) + "m " + Math.floor(seconds % 60) + "s";
    if (seconds < 86400) return Math.floor(seconds / 3600) + "h " + Math.floor((seconds % 3600) / 60) + "m";
    return Math.floor(seconds / 86400) + "d";
  }

  function tick() {
    var now = Date.now() / 1000;
    document.querySelectorAll("[data-expires-at]").forEach(function (el) {
      var left = parseFloat(el.getAttribute("data-expires-at")) - now;
      el.textContent = left > 0 ? "in " + human(left) : "expired";
      el.classList.toggle("soon", left > 0 && left < 300);
    });
    document.querySelectorAll("[data-since]").forEach(function (el) {
      el.textContent = human(Math.max(0, now - parseFloat(el.getAttribute("data-since")))) + " ago";
    });
  }

  function refresh(url, targetId) {
    return fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        var target = document.getElementById(targetId);
        if (html !== null && target) {
          var open = Array.prototype.map.call(target.querySelectorAll("details[open]"), function (d) { return d.id; });
          var focused = document.activeElement && target.contains(document.activeElement)
            && !isPick(document.activeElement);
          if (focused) return;  // never yank a form from under someone typing
          var ticked = picked(target);
          target.innerHTML = html;
          open.forEach(function (id) { var d = document.getElementById(id); if (d) d.open = true; });
          pickAgain(target, ticked);
          tick();
        }
      });
  }

  // A request page: its status and forms, its arguments and what they change, from one
  // fetch of the page, all or none: the forms carry the hash of the arguments shown beside
  // them, so they are never refreshed without the arguments (an edit changes both).
  function refreshRequest(url, ids) {
    return fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html === null) return;
        var fresh = new DOMParser().parseFromString(html, "text/html");
        var parts = ids.map(function (id) { return [document.getElementById(id), fresh.getElementById(id)]; });
        var focused = parts.some(function (p) { return p[0] && document.activeElement && p[0].contains(document.activeElement); });
        if (focused) return;  // never yank a form from under someone typing
        if (parts.some(function (p) { return !p[0] !== !p[1]; })) { window.location.reload(); return; }
        var open = Array.prototype.map.call(document.querySelectorAll("details[open]"), function (d) { return d.id; });
        parts.forEach(function (p) { if (p[0]) p[0].innerHTML = p[1].innerHTML; });
        open.forEach(function (id) { var d = document.getElementById(id); if (d) d.open = true; });
        tick();
      });
  }

  // Bulk approval (the inbox): only calls of one shape can be ticked together, and what is
  // ticked stays ticked when the list is refreshed (a row that left the list is dropped; a
  // new one is never ticked for you). The confirmation page lists what is sent.
  function isPick(el) { return el.matches && el.matches("input[name=id][data-shape]"); }
  function picks(root) { return Array.prototype.slice.call(root.querySelectorAll("input[name=id][data-shape]")); }
  function picked(root) { return picks(root).filter(function (b) { return b.checked; }).map(function (b) { return b.value; }); }
  function pickSync() {
    var ticked = picks(document).filter(function (b) { return b.checked; });
    var shape = ticked.length ? ticked[0].getAttribute("data-shape") : null;
    picks(document).forEach(function (b) { b.disabled = shape !== null && b.getAttribute("data-shape") !== shape; });
    var button = document.getElementById("bulk-review");
    if (button) {
      button.disabled = ticked.length === 0;
      button.textContent = ticked.length ? "Review " + ticked.length + " selected…" : "Review selected…";
    }
  }
  function pickAgain(root, ids) {
    picks(root).forEach(function (b) { b.checked = ids.indexOf(b.value) >= 0; });
    pickSync();
  }
  document.addEventListener("change", function (e) { if (isPick(e.target)) pickSync(); });

  var pending = null;
  function schedule(fn) {  // coalesce bursts of events into one refresh
    if (pending) return;
    pending = setTimeout(function () { pending = null; fn(); }, 100);
  }

  function onEvent(data) {
    if (live === "inbox") {
      schedule(function () { refresh("/inbox?fragment=1", "inbox-list"); });
    } else if (live === "request" && data.request_id === requestId) {
      schedule(function () { refreshRequest("/requests/" + encodeURIComponent(requestId), ["request-status", "request-args", "changes", "facts"]); });
    } else if (live === "thread" && (data.thread_id === threadId || data.kind === "thread.mode" || data.request_id)) {
      schedule(function () { refresh("/threads/" + encodeURIComponent(threadId) + "?fragment=1", "thread-body"); });
    }
  }

  if (live && window.EventSource) {
    // Replay from the page's own audit index, so nothing between render and connect is lost.
    var source = new EventSource("/api/v1/events" + (/^\d+$/.test(after) ? "?after=" + after : ""));
    source.onopen = function () { if (statusEl) { statusEl.textContent = "live"; statusEl.className = "live on"; } };
    source.onerror = function () { if (statusEl) { statusEl.textContent = "reconnecting…"; statusEl.className = "live off"; } };
    source.onmessage = function (e) {
      try { onEvent(JSON.parse(e.data)); } catch (err) { /* ignore malformed frames */ }
    };
  } else if (statusEl) {
    statusEl.textContent = "";
  }

  document.addEventListener("submit", function (e) {
    var form = e.target;
    if (form.id !== "mode-form") return;
    var chosen = form.querySelector("input[name=review_mode]:checked");
    if (chosen && chosen.value === "full") {
      if (!window.confirm("Full mode runs this thread's gated calls without asking anyone. Switch to full?")) {
        e.preventDefault();
        return;
      }
      form.querySelector("#confirm-full").value = "yes";
    }
  });

  // Passkeys (docs/signatures.md): approving a request that needs one signs exactly what is
  // approved; the settings page registers them. Binary values travel as base64url.
  function unb64(text) {
    var s = text.replace(/-/g, "+").replace(/_/g, "/");
    while (s.length % 4) s += "=";
    var raw = atob(s), out = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
    return out.buffer;
  }
  function b64(buffer) {
    var bytes = new Uint8Array(buffer), raw = "";
    for (var i = 0; i < bytes.length; i++) raw += String.fromCharCode(bytes[i]);
    return btoa(raw).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }
  function csrfToken() {
    var meta = document.querySelector("meta[name=csrf-token]");
    return meta ? meta.content : "";
  }
  function postJSON(url, body) {
    return fetch(url, { method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "Accept": "application/json", "X-CSRF-Token": csrfToken() },
      body: JSON.stringify(body || {}) }).then(function (r) {
      return r.json().then(function (data) {
        if (!r.ok) throw new Error((data.code || r.status) + ": " + (data.detail || data.message || ""));
        return data;
      });
    });
  }
  function credentialJSON(cred) {
    var r = cred.response, out = { id: cred.id, rawId: b64(cred.rawId), type: cred.type,
      clientExtensionResults: cred.getClientExtensionResults ? cred.getClientExtensionResults() : {},
      authenticatorAttachment: cred.authenticatorAttachment || null, response: { clientDataJSON: b64(r.clientDataJSON) } };
    if (r.attestationObject) {
      out.response.attestationObject = b64(r.attestationObject);
      out.response.transports = r.getTransports ? r.getTransports() : [];
    } else {
      out.response.authenticatorData = b64(r.authenticatorData);
      out.response.signature = b64(r.signature);
      out.response.userHandle = r.userHandle ? b64(r.userHandle) : null;
    }
    return out;
  }
  function passkeyProblem(form, err) {
    var box = form.querySelector(".passkey-error") || document.getElementById("passkey-error");
    if (box) { box.textContent = "Passkey: " + (err && err.message ? err.message : err); box.hidden = false; }
  }
  document.addEventListener("submit", function (e) {
    var form = e.target, kind = form.getAttribute("data-passkey");
    if (!kind) return;
    var field = form.querySelector("input[name=assertion]");
    if (field.value) return;
    e.preventDefault();
    var body = { kind: kind };
    try {
      if (kind === "edit") body.args = JSON.parse(form.querySelector("textarea[name=args]").value);
    } catch (err) { passkeyProblem(form, "the arguments are not JSON"); return; }
    postJSON("/api/v1/requests/" + encodeURIComponent(requestId) + "/passkey-options", body).then(function (o) {
      return navigator.credentials.get({ publicKey: { challenge: unb64(o.challenge), rpId: o.rpId,
        allowCredentials: o.allowCredentials.map(function (c) { return { type: c.type, id: unb64(c.id) }; }),
        userVerification: o.userVerification, timeout: o.timeout } });
    }).then(function (cred) {
      field.value = JSON.stringify(credentialJSON(cred));
      form.submit();
    }).catch(function (err) { passkeyProblem(form, err); });
  });
  var addKey = document.getElementById("passkey-add");
  if (addKey) addKey.addEventListener("click", function () {
    var name = (document.getElementById("passkey-name") || {}).value || "passkey";
    postJSON("/api/v1/passkeys/options").then(function (o) {
      o.challenge = unb64(o.challenge);
      o.user.id = unb64(o.user.id);
      o.excludeCredentials = (o.excludeCredentials || []).map(function (c) { return { type: c.type, id: unb64(c.id) }; });
      return navigator.credentials.create({ publicKey: o });
    }).then(function (cred) {
      return postJSON("/api/v1/passkeys", { credential: credentialJSON(cred), name: name });
    }).then(function () { window.location = "/settings/passkeys?done=added"; })
      .catch(function (err) { passkeyProblem(document, err); });
  });

  pickSync();
  tick();
  setInterval(tick, 1000);
})();
