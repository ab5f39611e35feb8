"""Who answers a message: pure mention logic, no I/O."""
