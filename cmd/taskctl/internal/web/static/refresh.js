// Live refresh of the overview: every data-refresh milliseconds the
// figures are fetched again, as an HTML fragment drawn (and escaped) by
// the server, and put in place. Without JavaScript the page reads the
// same; its Reload link refreshes it.
(function () {
  'use strict';
  var box = document.getElementById('figures');
  if (!box || !window.fetch) {
    return;
  }
  var source = box.getAttribute('data-live');
  var every = parseInt(box.getAttribute('data-refresh'), 10) || 5000;
  function say(text) {
    var state = document.getElementById('live-state');
    if (state) {
      state.textContent = text;
    }
  }
  function refresh() {
    fetch(source, { credentials: 'same-origin', headers: { Accept: 'text/html' } })
      .then(function (response) {
        if (!response.ok || response.redirected || response.headers.get('X-Taskctl-Fragment') !== 'figures') {
          throw new Error('status ' + response.status);
        }
        return response.text();
      })
      .then(function (html) {
        box.innerHTML = html;
        say('Live: refreshed every ' + Math.round(every / 1000) + ' s.');
        setTimeout(refresh, every);
      })
      .catch(function () {
        say('Live refresh failed; reload the page.');
      });
  }
  say('Live: refreshed every ' + Math.round(every / 1000) + ' s.');
  setTimeout(refresh, every);
})();
