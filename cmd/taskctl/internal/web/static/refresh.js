// Live refresh of the overview: every data-refresh milliseconds the
// figures are fetched again, as an HTML fragment drawn (and escaped) by
// the server, and put in place. A fetch that fails (the dashboard
// restarting, the network, a session that ended) leaves the figures in
// place marked stale, with the time they were read, and is tried again
// after a wait that doubles up to a minute; the first fetch that works
// puts fresh figures in place. Without JavaScript the page reads the
// same; its Reload link refreshes it.
(function () {
  'use strict';
  var box = document.getElementById('figures');
  if (!box || !window.fetch) {
    return;
  }
  var source = box.getAttribute('data-live');
  var every = parseInt(box.getAttribute('data-refresh'), 10) || 5000;
  var longest = Math.max(60000, every);
  var failures = 0;
  var fresh = new Date(); // when the figures shown were fetched
  function say(text, stale) {
    var state = document.getElementById('live-state');
    if (state) {
      state.textContent = text;
    }
    box.classList.toggle('stale', stale);
  }
  function clock(d) {
    return d.toTimeString().slice(0, 8);
  }
  function live() {
    say('Live: refreshed every ' + Math.round(every / 1000) + ' s.', false);
  }
  function failed(why) {
    failures++;
    var wait = Math.min(every * Math.pow(2, failures - 1), longest);
    say('Stale: these figures were fetched at ' + clock(fresh) + '; refreshing failed (' + why + '), ' +
      failures + ' times in a row; trying again in ' + Math.round(wait / 1000) + ' s.', true);
    setTimeout(refresh, wait);
  }
  function refresh() {
    fetch(source, { credentials: 'same-origin', headers: { Accept: 'text/html' } })
      .then(function (response) {
        if (response.redirected && response.url.indexOf('/login') >= 0) {
          throw new Error('the session has ended: reload the page to log in');
        }
        if (!response.ok || response.headers.get('X-Taskctl-Fragment') !== 'figures') {
          throw new Error('the dashboard answered ' + response.status);
        }
        return response.text();
      })
      .then(function (html) {
        box.innerHTML = html;
        fresh = new Date();
        failures = 0;
        live();
        setTimeout(refresh, every);
      })
      .catch(function (e) {
        failed(e instanceof TypeError ? 'the dashboard did not answer' : e.message);
      });
  }
  live();
  setTimeout(refresh, every);
})();
