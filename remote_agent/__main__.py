import sys

from remote_agent.main import main

sys.exit(main())
