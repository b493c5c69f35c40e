// The chat page's HTTP helpers: JSON calls that carry the API key, and a
// text/event-stream reader for fetch responses (a POST cannot use
// EventSource, and EventSource cannot send the key in a header).
(function (global) {
  'use strict';

  var C = global.Chatpipe = global.Chatpipe || {};
  C.KEY_STORE = 'chatpipe.key';
  C.key = localStorage.getItem(C.KEY_STORE) || '';
  // onUnauthorized is called with the server's message on every 401.
  C.onUnauthorized = function () {};

  function sleep(ms, signal) {
    return new Promise(function (resolve) {
      var t = setTimeout(resolve, ms);
      if (signal) signal.addEventListener('abort', function () { clearTimeout(t); resolve(); }, { once: true });
    });
  }

  // ---- HTTP ----

  function headers(extra) {
    var h = extra || {};
    if (C.key) h.Authorization = 'Bearer ' + C.key;
    return h;
  }

  function ApiError(status, code, message) {
    this.status = status;
    this.code = code;
    this.message = message;
  }

  async function errorOf(resp) {
    var data = null;
    try { data = await resp.json(); } catch (e) { /* not JSON */ }
    var err = data && data.error ? data.error : {};
    var e = new ApiError(resp.status, err.code || '', err.message || 'The server answered ' + resp.status + '.');
    if (resp.status === 401) C.onUnauthorized(e.message);
    return e;
  }

  async function api(method, path, body) {
    var opts = { method: method, headers: headers() };
    if (body !== undefined) {
      opts.headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(body);
    }
    var resp = await fetch(path, opts);
    if (!resp.ok) throw await errorOf(resp);
    if (resp.status === 204) return null;
    return resp.json();
  }

  // readSSE reads text/event-stream frames from a fetch response and calls
  // onFrame({type, id, data}) for each; it resolves at the end of the body
  // and rejects when the connection breaks.
  async function readSSE(resp, onFrame) {
    var reader = resp.body.getReader();
    var decoder = new TextDecoder();
    var rest = '';
    var sawCR = false;
    var data = [];
    var type = '';
    var id = null;
    function line(l) {
      if (l === '') {
        if (data.length) onFrame({ type: type || 'message', id: id, data: data.join('\n') });
        data = [];
        type = '';
        return;
      }
      if (l[0] === ':') return; // a comment: the server's heartbeat
      var i = l.indexOf(':');
      var field = i < 0 ? l : l.slice(0, i);
      var value = i < 0 ? '' : l.slice(i + 1).replace(/^ /, '');
      if (field === 'data') data.push(value);
      else if (field === 'event') type = value;
      else if (field === 'id' && value.indexOf('\u0000') < 0) id = value;
    }
    for (;;) {
      var r = await reader.read();
      if (r.done) return;
      var chunk = decoder.decode(r.value, { stream: true });
      if (sawCR && chunk[0] === '\n') chunk = chunk.slice(1); // a CR LF cut between two reads
      sawCR = chunk.length > 0 && chunk[chunk.length - 1] === '\r';
      var lines = (rest + chunk).split(/\r\n|\r|\n/);
      rest = lines.pop();
      lines.forEach(line);
    }
  }

  C.sleep = sleep;
  C.headers = headers;
  C.errorOf = errorOf;
  C.api = api;
  C.readSSE = readSSE;
})(window);
