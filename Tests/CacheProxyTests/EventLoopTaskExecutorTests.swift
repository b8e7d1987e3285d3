// SPDX-License-Identifier: Apache-2.0

#if Proxy
import NIOCore
import NIOPosix
import Testing

@testable import CacheProxyCore

@Suite struct EventLoopTaskExecutorTests {
    @Test func aTaskThatPrefersALoopRunsOnIt() async {
        let loop = MultiThreadedEventLoopGroup.singleton.any()
        let onLoop = await withTaskExecutorPreference(EventLoopTaskExecutor(loop)) {
            await Task.yield()
            return loop.inEventLoop
        }
        #expect(onLoop)
    }
}
#endif
