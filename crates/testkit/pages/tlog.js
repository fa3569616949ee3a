// tabgate testkit log channel: tlog(key, value) reports page state to the fixture server
// (POST /__log on this document's own origin) and appends "key: value" to #log if present.
(function () {
  function tlog(key, value) {
    var v = (typeof value === 'string') ? value : JSON.stringify(value);
    if (v === undefined) v = 'undefined';
    var body = JSON.stringify({ key: String(key), value: v, t: performance.timeOrigin + performance.now() });
    var sent = false;
    try {
      fetch('/__log', { method: 'POST', body: body, keepalive: true, cache: 'no-store' }).catch(function () {
        try { navigator.sendBeacon('/__log', body); } catch (e) {}
      });
      sent = true;
    } catch (e) {}
    if (!sent) { try { navigator.sendBeacon('/__log', body); } catch (e) {} }
    var el = document.getElementById('log');
    if (el) {
      var line = document.createElement('div');
      line.textContent = key + ': ' + v;
      el.appendChild(line);
    }
  }
  window.tlog = tlog;
})();
