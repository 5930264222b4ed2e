// SPDX-License-Identifier: Apache-2.0
// A small HTTP/1.x server for the exporter's few GETs: one thread, non-blocking sockets, epoll.
// Every resource a client can make it hold is bounded — connections, bytes of a request head,
// the time to send it (from the connection's start, so a trickle does not extend it) and the
// time to take the response — so no local user can stall a scrape or grow its memory. Each
// connection is closed after its response: an idle exporter has nothing to wake for.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/listen_address.h"

namespace pm::http {

struct Limits {
  size_t max_connections = 64;  // beyond: the oldest connection is closed for the new one
  std::chrono::milliseconds request_time{2000};   // from accept to the end of the request head
  std::chrono::milliseconds response_time{5000};  // to write the whole response
  std::chrono::milliseconds linger_time{500};     // after the response, for the client to close
};

struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  // The body in parts, sent one after the other (a shared text is sent without a copy).
  std::vector<std::shared_ptr<const std::string>> body;
  // Called in the server's thread once the last byte went to the kernel.
  std::function<void()> written;
};

// Called in the server's thread for each well-formed request with its method and target.
using Handler = std::function<Response(std::string_view method, std::string_view target)>;

class Server {
 public:
  // Binds and listens now (a busy port is an error before anything starts: Errc::kInvalidArgument
  // with what to do about it). Serves nothing until start().
  static Result<std::unique_ptr<Server>> bind(const ListenAddress& addr, Limits limits = {});
  virtual ~Server() = default;
  // Starts the server's thread; it blocks every signal (they stay with the event loop).
  virtual Status start(Handler handler) = 0;
};

}  // namespace pm::http
