"""Put ``correct/`` on sys.path so the tests import the local ``bridge``."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
